package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/notice"
)

func kindName(k account.KeyKind) string { return k.String() }

// Authenticate returns the principal owning key, or errs.Unauthorised. A
// lapsed subscription shows as Principal.Account.Active false. Principals
// are cached briefly in memory, valid only while the accounts version
// (migration 0008) is unchanged: a rotation or lapse in any process
// sharing the file takes effect on the next request.
func (s *Store) Authenticate(ctx context.Context, key string) (account.Principal, error) {
	hash := account.HashKey(key)
	version, err := metaInt(ctx, s.read, metaAccountsVersion)
	if err != nil {
		return account.Principal{}, fmt.Errorf("sqlite: authenticate: %w", err)
	}
	now := time.Now()
	if p, ok := s.auth.get(hash, version, now); ok {
		return p, nil
	}
	var p account.Principal
	var kind string
	err = s.read.QueryRowContext(ctx, `SELECT a.id, a.name, a.plan, a.active, a.created_at, k.kind
		FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.hash = ?`, hash).
		Scan(&p.Account.ID, &p.Account.Name, &p.Account.Plan, &p.Account.Active, &p.Account.CreatedAt, &kind)
	if err == sql.ErrNoRows {
		return p, account.ErrUnknownKey()
	}
	if err != nil {
		return p, fmt.Errorf("sqlite: authenticate: %w", err)
	}
	p.Kind = account.ParseKind(kind)
	s.auth.put(hash, version, p, now)
	return p, nil
}

// CreateAccount creates an active account on a plan and returns its keys,
// which are stored only as hashes.
func (s *Store) CreateAccount(ctx context.Context, name, plan string) (account.Created, error) {
	name, err := account.CheckNew(name, plan, s.plans)
	if err != nil {
		return account.Created{}, err
	}
	now := notice.Timestamp(s.now())
	created := account.Created{AccountID: account.NewID("acc_")}
	tx, err := s.begin(ctx)
	if err != nil {
		return account.Created{}, fmt.Errorf("sqlite: create account: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO accounts (id, name, plan, active, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?)",
		created.AccountID, name, plan, now, now); err != nil {
		return account.Created{}, fmt.Errorf("sqlite: create account: %w", err)
	}
	if created, err = addKeys(ctx, tx, created.AccountID, now); err != nil {
		return account.Created{}, err
	}
	if err := tx.Commit(); err != nil {
		return account.Created{}, fmt.Errorf("sqlite: create account: %w", err)
	}
	return created, nil
}

// addKeys issues a fresh account key and read key for an account.
func addKeys(ctx context.Context, tx *sql.Tx, accountID, now string) (account.Created, error) {
	c := account.Created{
		AccountID:  accountID,
		AccountKey: account.NewKey(account.AccountKeyPrefix),
		ReadKey:    account.NewKey(account.ReadKeyPrefix),
	}
	for _, k := range []struct {
		key  string
		kind account.KeyKind
	}{{c.AccountKey, account.AccountKey}, {c.ReadKey, account.ReadKey}} {
		if _, err := tx.ExecContext(ctx, "INSERT INTO api_keys (hash, account_id, kind, created_at) VALUES (?, ?, ?, ?)",
			account.HashKey(k.key), accountID, kindName(k.kind), now); err != nil {
			return account.Created{}, fmt.Errorf("sqlite: store keys of %s: %w", accountID, err)
		}
	}
	return c, nil
}

// ListAccounts returns every account, oldest first.
func (s *Store) ListAccounts(ctx context.Context) ([]account.Account, error) {
	rows, err := s.read.QueryContext(ctx, "SELECT id, name, plan, active, created_at FROM accounts ORDER BY created_at, rowid")
	if err != nil {
		return nil, fmt.Errorf("sqlite: list accounts: %w", err)
	}
	defer rows.Close()
	out := []account.Account{}
	for rows.Next() {
		var a account.Account
		if err := rows.Scan(&a.ID, &a.Name, &a.Plan, &a.Active, &a.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// SetSubscription activates or lapses an account's subscription.
func (s *Store) SetSubscription(ctx context.Context, accountID string, active bool) error {
	res, err := s.write.ExecContext(ctx, "UPDATE accounts SET active = ?, updated_at = ? WHERE id = ?",
		active, notice.Timestamp(s.now()), accountID)
	if err != nil {
		return fmt.Errorf("sqlite: set subscription of %s: %w", accountID, s.busy(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return noAccount(accountID)
	}
	return nil
}

// RotateKeys replaces both keys of an account; the old ones stop working as
// soon as this returns.
func (s *Store) RotateKeys(ctx context.Context, accountID string) (account.Created, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return account.Created{}, fmt.Errorf("sqlite: rotate keys of %s: %w", accountID, err)
	}
	defer tx.Rollback()
	now := notice.Timestamp(s.now())
	res, err := tx.ExecContext(ctx, "UPDATE accounts SET updated_at = ? WHERE id = ?", now, accountID)
	if err != nil {
		return account.Created{}, fmt.Errorf("sqlite: rotate keys of %s: %w", accountID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return account.Created{}, noAccount(accountID)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM api_keys WHERE account_id = ?", accountID); err != nil {
		return account.Created{}, fmt.Errorf("sqlite: rotate keys of %s: %w", accountID, err)
	}
	created, err := addKeys(ctx, tx, accountID, now)
	if err != nil {
		return account.Created{}, err
	}
	if err := tx.Commit(); err != nil {
		return account.Created{}, fmt.Errorf("sqlite: rotate keys of %s: %w", accountID, err)
	}
	return created, nil
}

func noAccount(id string) error { return account.ErrNoAccount(id) }
