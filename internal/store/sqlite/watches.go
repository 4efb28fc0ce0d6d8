package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
)

var _ store.Watches = (*Store)(nil)

// querier is what *sql.Tx and *sql.DB share.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// storedFilters is the filters' stored form (watch.StoredFilters).
type storedFilters = watch.StoredFilters

func encodeFilters(f watch.Filters) (string, error) {
	b, err := json.Marshal(storedFilters(f))
	return string(b), err
}

func decodeFilters(s string) (watch.Filters, error) {
	var f storedFilters
	err := json.Unmarshal([]byte(s), &f)
	return watch.Filters(f), err
}

// registerVersion names the register currently swapped in: the name of its
// ACN index, which RegisterLoad.Commit numbers by load (register_acn_N).
// "" when it cannot tell; callers then treat every watch's keys as stale,
// which is slower but right.
func registerVersion(ctx context.Context, q querier) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT coalesce((SELECT name FROM sqlite_schema
		WHERE type = 'index' AND tbl_name = 'register' AND name GLOB 'register_acn_*'), '')`).Scan(&v)
	if err != nil {
		return "", fmt.Errorf("sqlite: read register version: %w", err)
	}
	return v, nil
}

// Staging tables of the writer connection for RefreshWatchKeys, filled per
// call inside its write transaction (temp tables are per connection and in
// memory). The expansion is the SQL twin of companySnap.expand's keys.
const createStaging = `
CREATE TEMP TABLE IF NOT EXISTS stage_ids (v TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS stage_acns (v TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TEMP TABLE IF NOT EXISTS stage_keys (v TEXT PRIMARY KEY) WITHOUT ROWID;
DELETE FROM temp.stage_ids;
DELETE FROM temp.stage_acns;
DELETE FROM temp.stage_keys;`

// stageSteps expand the identifiers in stage_ids through the current
// register. The register's ABN index is partial (abn <> ”), so every ABN
// lookup states that condition for the planner to use it.
var stageSteps = []string{
	// The ACNs of the watch: its ACNs and those its ABNs resolve to.
	`INSERT OR IGNORE INTO temp.stage_acns (v)
	 SELECT v FROM temp.stage_ids WHERE length(v) = 9
	 UNION ALL
	 SELECT r.acn FROM temp.stage_ids i CROSS JOIN main.register r
	 WHERE length(i.v) = 11 AND r.abn = i.v AND r.abn <> ''`,
	// Match keys: the identifiers, those ACNs, and every register ABN of them.
	`INSERT OR IGNORE INTO temp.stage_keys (v)
	 SELECT v FROM temp.stage_ids
	 UNION ALL SELECT v FROM temp.stage_acns
	 UNION ALL
	 SELECT r.abn FROM temp.stage_acns a CROSS JOIN main.register r
	 WHERE r.acn = a.v AND r.abn <> ''`,
}

// stage loads the identifiers (a JSON array) into the staging tables and
// expands them.
func stage(ctx context.Context, tx *sql.Tx, idsJSON string) error {
	if err := clearStaging(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO temp.stage_ids (v) SELECT value FROM json_each(?)", idsJSON); err != nil {
		return fmt.Errorf("sqlite: stage watch identifiers: %w", err)
	}
	for _, q := range stageSteps {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sqlite: resolve watch identifiers through the register: %w", err)
		}
	}
	return nil
}

// clearStaging creates the staging tables if need be and empties them.
func clearStaging(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, createStaging); err != nil {
		return fmt.Errorf("sqlite: prepare watch staging: %w", err)
	}
	return nil
}

// CreateWatch stores w if plan allows, in one write transaction: the watch
// count, then the company quota, then the write. The store's single writer
// connection serialises this process's creates and other processes wait on
// the database lock (busy_timeout), so concurrent creates cannot overshoot;
// a rejected create writes nothing.
//
// The identifiers are resolved through the in-memory company index (see
// watchExpansion) before the transaction; only the quota check and the
// writes hold the lock.
func (s *Store) CreateWatch(ctx context.Context, w watch.Watch, plan account.Plan) (watch.Watch, error) {
	if w.ID == "" || w.AccountID == "" {
		return w, fmt.Errorf("sqlite: create watch: the watch needs an ID and an AccountID; build it with watch.New")
	}
	idsJSON, err := json.Marshal(nonNilStrings(w.Identifiers))
	if err != nil {
		return w, err
	}
	filters, err := encodeFilters(w.Filters)
	if err != nil {
		return w, fmt.Errorf("sqlite: encode filters of watch %s: %w", w.ID, err)
	}
	var exp watchExpansion
	if len(w.Identifiers) > 0 {
		snap, err := s.companies.current(ctx, s.read)
		if err != nil {
			return w, err
		}
		exp = snap.expand(w.Identifiers)
	}
	keysJSON, err := json.Marshal(nonNilStrings(exp.keys))
	if err != nil {
		return w, err
	}
	companiesJSON, err := json.Marshal(nonNilStrings(exp.companies))
	if err != nil {
		return w, err
	}
	w.Unresolved = nonNilStrings(exp.unresolved)
	unresolvedJSON, err := json.Marshal(w.Unresolved)
	if err != nil {
		return w, err
	}

	tx, err := s.begin(ctx)
	if err != nil {
		return w, fmt.Errorf("sqlite: create watch: %w", err)
	}
	defer tx.Rollback()
	var watches int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM watches WHERE account_id = ?", w.AccountID).Scan(&watches); err != nil {
		return w, fmt.Errorf("sqlite: count watches of account %s: %w", w.AccountID, err)
	}
	if watches >= plan.Watches {
		return w, errs.New(errs.WatchLimitReached,
			"plan %s allows %d watches and the account has %d; delete a watch (DELETE /v1/watches/{id}) or upgrade the plan",
			plan.Name, plan.Watches, watches)
	}
	if len(exp.companies) > 0 {
		var current, adding int
		if err := tx.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM account_companies WHERE account_id = ?1),
			(SELECT count(*) FROM json_each(?2) j WHERE NOT EXISTS
				(SELECT 1 FROM account_companies a WHERE a.account_id = ?1 AND a.company = j.value))`,
			w.AccountID, string(companiesJSON)).Scan(&current, &adding); err != nil {
			return w, fmt.Errorf("sqlite: count companies of account %s: %w", w.AccountID, err)
		}
		if current+adding > plan.Companies {
			return w, errs.New(errs.QuotaExceeded,
				"plan %s allows %d companies; the account watches %d and this watch would add %d; remove companies or watches, or upgrade the plan",
				plan.Name, plan.Companies, current, adding)
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO watches (id, account_id, name, active, deactivated_reason,
		filters, alert_email, webhook_url, identifiers, identifier_count, unresolved, companies, key_count,
		keys_version, created_at, updated_at, created_seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) FROM notices))`,
		w.ID, w.AccountID, w.Name, w.Active, w.DeactivatedReason, filters, nullable(w.AlertEmail),
		nullable(w.WebhookURL), string(idsJSON), len(w.Identifiers), string(unresolvedJSON),
		string(companiesJSON), len(exp.keys), exp.registerVersion,
		notice.Timestamp(w.CreatedAt), notice.Timestamp(w.UpdatedAt))
	if err != nil {
		return w, fmt.Errorf("sqlite: store watch %s: %w", w.ID, err)
	}
	if len(exp.keys) > 0 {
		if _, err := tx.ExecContext(ctx, "INSERT INTO watch_keys (watch_id, key) SELECT ?, value FROM json_each(?)", w.ID, string(keysJSON)); err != nil {
			return w, fmt.Errorf("sqlite: store match keys of watch %s: %w", w.ID, err)
		}
	}
	if len(exp.companies) > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO account_companies (account_id, company, refs)
			SELECT ?, value, 1 FROM json_each(?) WHERE true
			ON CONFLICT (account_id, company) DO UPDATE SET refs = refs + 1`, w.AccountID, string(companiesJSON)); err != nil {
			return w, fmt.Errorf("sqlite: count companies of watch %s: %w", w.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return w, fmt.Errorf("sqlite: commit watch %s: %w", w.ID, err)
	}
	return w, nil
}

// watchExpansion is what a watch's identifiers mean against the register
// and the notices.
type watchExpansion struct {
	// keys are the match keys, sorted: every identifier, the ACNs each ABN
	// resolves to, and every register ABN of those ACNs and of the
	// identifiers that are ACNs (the same set as the SQL in stageSteps).
	keys []string
	// companies are the distinct companies for the quota: an ACN counts as
	// itself; an ABN as the ACN the register resolves it to, else as itself
	// (an ABN the register does not know is a company of its own, even when
	// a notice pairs it with an ACN). Companies stay counted as resolved at
	// creation until the watch is deleted.
	companies []string
	// unresolved are the identifiers neither the register nor any notice
	// holds, in the given order.
	unresolved      []string
	registerVersion string
}

// expand resolves normalised, distinct identifiers.
func (c *companySnap) expand(ids []string) watchExpansion {
	exp := watchExpansion{registerVersion: c.regVersion}
	keys := make(map[string]struct{}, len(ids)*2)
	companies := make(map[string]struct{}, len(ids))
	addACN := func(acn uint32) {
		keys[acnString(acn)] = struct{}{}
		for _, abn := range c.abnsOf(acn) {
			keys[fmt.Sprintf("%011d", abn)] = struct{}{} // 11 digits: an ABN may start with 0
		}
	}
	for _, v := range ids {
		keys[v] = struct{}{}
		known := false
		if n, ok := parseDigits([]byte(v), 9); ok {
			companies[v] = struct{}{}
			_, known = c.findACN(uint32(n))
			addACN(uint32(n))
			known = known || len(c.byACN.get(n)) > 0
		} else if n, ok := parseDigits([]byte(v), 11); ok {
			acns := c.acnsOf(n)
			company := v
			if len(acns) > 0 {
				company, known = acnString(acns[0]), true
			}
			companies[company] = struct{}{}
			for _, acn := range acns {
				addACN(acn)
			}
			known = known || len(c.byABN.get(n)) > 0
		}
		if !known {
			exp.unresolved = append(exp.unresolved, v)
		}
	}
	exp.keys = make([]string, 0, len(keys))
	for k := range keys {
		exp.keys = append(exp.keys, k)
	}
	slices.Sort(exp.keys)
	exp.companies = make([]string, 0, len(companies))
	for k := range companies {
		exp.companies = append(exp.companies, k)
	}
	slices.Sort(exp.companies)
	return exp
}

// watchColumns are what scanWatch reads.
const watchColumns = `w.id, w.account_id, w.name, w.active, w.deactivated_reason, w.filters,
	w.alert_email, w.webhook_url, w.identifiers, w.unresolved, w.created_at, w.updated_at`

func scanWatch(r scanner) (watch.Watch, error) {
	var (
		w                      watch.Watch
		filters, ids, unres    string
		created, updated       string
		alertEmail, webhookURL sql.NullString
	)
	if err := r.Scan(&w.ID, &w.AccountID, &w.Name, &w.Active, &w.DeactivatedReason, &filters,
		&alertEmail, &webhookURL, &ids, &unres, &created, &updated); err != nil {
		return w, err
	}
	w.AlertEmail, w.WebhookURL = ptr(alertEmail), ptr(webhookURL)
	var err error
	if w.Filters, err = decodeFilters(filters); err != nil {
		return w, fmt.Errorf("sqlite: watch %s has unreadable filters: %w", w.ID, err)
	}
	if err := json.Unmarshal([]byte(ids), &w.Identifiers); err != nil {
		return w, fmt.Errorf("sqlite: watch %s has unreadable identifiers: %w", w.ID, err)
	}
	if err := json.Unmarshal([]byte(unres), &w.Unresolved); err != nil {
		return w, fmt.Errorf("sqlite: watch %s has unreadable unresolved identifiers: %w", w.ID, err)
	}
	if w.CreatedAt, err = time.Parse(time.RFC3339Nano, created); err != nil {
		return w, fmt.Errorf("sqlite: watch %s has unreadable created_at %q: %w", w.ID, created, err)
	}
	if w.UpdatedAt, err = time.Parse(time.RFC3339Nano, updated); err != nil {
		return w, fmt.Errorf("sqlite: watch %s has unreadable updated_at %q: %w", w.ID, updated, err)
	}
	return w, nil
}

func watchNotFound(id string) error {
	return errs.New(errs.NotFound, "no watch %s on this account; GET /v1/watches lists the account's watches", errs.Quote(id))
}

// getWatch reads one watch of the account.
func getWatch(ctx context.Context, q querier, accountID, id string) (watch.Watch, error) {
	w, err := scanWatch(q.QueryRowContext(ctx, "SELECT "+watchColumns+" FROM watches w WHERE w.id = ? AND w.account_id = ?", id, accountID))
	if err == sql.ErrNoRows {
		return w, watchNotFound(id)
	}
	if err != nil {
		return w, fmt.Errorf("sqlite: read watch %s: %w", id, err)
	}
	return w, nil
}

// Watch returns one watch of the account, or errs.NotFound (also for a
// watch of another account).
func (s *Store) Watch(ctx context.Context, accountID, id string) (watch.Watch, error) {
	return getWatch(ctx, s.read, accountID, id)
}

// ListWatches returns the account's watches, oldest first (ties by id).
func (s *Store) ListWatches(ctx context.Context, accountID string) ([]watch.Watch, error) {
	rows, err := s.read.QueryContext(ctx, "SELECT "+watchColumns+" FROM watches w WHERE w.account_id = ? ORDER BY w.created_at, w.id", accountID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list watches of account %s: %w", accountID, err)
	}
	defer rows.Close()
	out := []watch.Watch{}
	for rows.Next() {
		w, err := scanWatch(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list watches of account %s: %w", accountID, err)
	}
	return out, nil
}

// UpdateWatch applies a validated patch at now (watch.Watch.Apply). Turning
// a watch back on also resets its count of consecutive failed deliveries,
// so it gets a fresh run of DeactivateAfter failures.
func (s *Store) UpdateWatch(ctx context.Context, accountID, id string, p watch.Patch, now time.Time) (watch.Watch, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return watch.Watch{}, fmt.Errorf("sqlite: update watch %s: %w", id, err)
	}
	defer tx.Rollback()
	w, err := getWatch(ctx, tx, accountID, id)
	if err != nil {
		return w, err
	}
	wasActive := w.Active
	w.Apply(p, now)
	_, err = tx.ExecContext(ctx, `UPDATE watches SET name = ?, active = ?, deactivated_reason = ?,
		alert_email = ?, updated_at = ?,
		consecutive_failures = CASE WHEN ? THEN 0 ELSE consecutive_failures END
		WHERE id = ?`,
		w.Name, w.Active, w.DeactivatedReason, nullable(w.AlertEmail), notice.Timestamp(w.UpdatedAt),
		w.Active && !wasActive, w.ID)
	if err != nil {
		return w, fmt.Errorf("sqlite: update watch %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return w, fmt.Errorf("sqlite: commit update of watch %s: %w", id, err)
	}
	return w, nil
}

// DeleteWatch removes a watch with its match keys and frees the companies
// only it counted.
func (s *Store) DeleteWatch(ctx context.Context, accountID, id string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: delete watch %s: %w", id, err)
	}
	defer tx.Rollback()
	var companies string
	err = tx.QueryRowContext(ctx, "SELECT companies FROM watches WHERE id = ? AND account_id = ?", id, accountID).Scan(&companies)
	if err == sql.ErrNoRows {
		return watchNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("sqlite: delete watch %s: %w", id, err)
	}
	for _, q := range []string{
		"DELETE FROM account_companies WHERE account_id = ?1 AND refs = 1 AND company IN (SELECT value FROM json_each(?2))",
		"UPDATE account_companies SET refs = refs - 1 WHERE account_id = ?1 AND company IN (SELECT value FROM json_each(?2))",
	} {
		if _, err := tx.ExecContext(ctx, q, accountID, companies); err != nil {
			return fmt.Errorf("sqlite: free the companies of watch %s: %w", id, err)
		}
	}
	// Issue 4: the watch's deliveries go with the watch row
	// (deliveries.watch_id ON DELETE CASCADE, migration 0003).
	if _, err := tx.ExecContext(ctx, "DELETE FROM watch_keys WHERE watch_id = ?", id); err != nil {
		return fmt.Errorf("sqlite: delete match keys of watch %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM watches WHERE id = ?", id); err != nil {
		return fmt.Errorf("sqlite: delete watch %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit delete of watch %s: %w", id, err)
	}
	return nil
}

// RefreshWatchKeys re-expands the match keys of every watch expanded
// against an older register, and returns how many it rewrote. Matches is
// right without it (it expands stale watches on the fly), only slower; run
// it after a register load. Each watch is rewritten in its own transaction.
// Quota counts are not recomputed: companies stay counted as resolved when
// each watch was created.
func (s *Store) RefreshWatchKeys(ctx context.Context) (int, error) {
	version, err := registerVersion(ctx, s.read)
	if err != nil || version == "" {
		return 0, err
	}
	rows, err := s.read.QueryContext(ctx, "SELECT id FROM watches WHERE identifier_count > 0 AND keys_version <> ?", version)
	if err != nil {
		return 0, fmt.Errorf("sqlite: find watches to refresh: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlite: find watches to refresh: %w", err)
	}
	n := 0
	for _, id := range ids {
		done, err := s.refreshWatch(ctx, id)
		if err != nil {
			return n, err
		}
		if done {
			n++
		}
	}
	return n, nil
}

func (s *Store) refreshWatch(ctx context.Context, id string) (bool, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return false, fmt.Errorf("sqlite: refresh watch %s: %w", id, err)
	}
	defer tx.Rollback()
	version, err := registerVersion(ctx, tx)
	if err != nil {
		return false, err
	}
	var ids, have string
	err = tx.QueryRowContext(ctx, "SELECT identifiers, keys_version FROM watches WHERE id = ?", id).Scan(&ids, &have)
	if err == sql.ErrNoRows || (err == nil && have == version) {
		return false, nil // deleted, or refreshed by someone else meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: refresh watch %s: %w", id, err)
	}
	if err := stage(ctx, tx, ids); err != nil {
		return false, err
	}
	for _, st := range []struct {
		q    string
		args []any
	}{
		{"DELETE FROM watch_keys WHERE watch_id = ?", []any{id}},
		{"INSERT INTO watch_keys (watch_id, key) SELECT ?, v FROM temp.stage_keys", []any{id}},
		{"UPDATE watches SET keys_version = ?, key_count = (SELECT count(*) FROM temp.stage_keys) WHERE id = ?", []any{version, id}},
	} {
		if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
			return false, fmt.Errorf("sqlite: refresh match keys of watch %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlite: commit refreshed keys of watch %s: %w", id, err)
	}
	return true, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return slices.Clone(s)
}

// How Matches finds a watch's notices. A watch with few keys is matched key
// by key: each key is an index range on notices (acn or abn, then seq), so
// the cost follows the watch's size, not the corpus's. A large watch
// (thousands of companies) matches densely: walking notices in seq order
// from the cursor and probing the watch's keys finds a page after a short
// walk, where going key by key would fetch and sort its whole history. The
// walk is bounded by matchScanWindow notices; if the page is not full by
// then, the rest comes key by key, which is then cheap because the watch
// has been shown to match sparsely.
//
// Variables, not constants, so tests can force each path.
var (
	keyDrivenMax          = 2000
	matchScanWindow int64 = 20000
)

// watchKeysCTE returns the WITH clause of a watch's match keys, keys(v),
// and its arguments: the stored keys when they were expanded against the
// current register, else the identifiers expanded afresh.
func watchKeysCTE(id string, current bool) (string, []any) {
	if current {
		return "WITH keys(v) AS (SELECT key FROM watch_keys WHERE watch_id = ?)", []any{id}
	}
	return `WITH ids(v) AS (SELECT value FROM json_each((SELECT identifiers FROM watches WHERE id = ?))),
	acns(v) AS (SELECT v FROM ids WHERE length(v) = 9
		UNION SELECT r.acn FROM ids CROSS JOIN register r WHERE length(ids.v) = 11 AND r.abn = ids.v AND r.abn <> ''),
	keys(v) AS MATERIALIZED (SELECT v FROM ids UNION SELECT v FROM acns
		UNION SELECT r.abn FROM acns CROSS JOIN register r WHERE r.acn = acns.v AND r.abn <> '')`, []any{id}
}

// Matches returns up to limit notices matching the watch with notice_seq >
// since, ascending by notice_seq (full history). A notice matches when the
// watch has no identifiers, or its acn or abn is one of the watch's keys
// (the identifiers, the ACN each ABN resolves to, the register ABNs of each
// ACN), and it passes the watch's filters (deregistration included unless
// the watch says otherwise).
func (s *Store) Matches(ctx context.Context, accountID, id string, since int64, limit int) (store.MatchPage, error) {
	page := store.MatchPage{Notices: []notice.Notice{}, NextSince: since}
	if limit <= 0 {
		limit = 100
	}
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return page, fmt.Errorf("sqlite: matches of watch %s: %w", id, err)
	}
	defer tx.Rollback()
	var (
		filters, keysVersion string
		idCount, keyCount    int
	)
	err = tx.QueryRowContext(ctx, "SELECT filters, identifier_count, key_count, keys_version FROM watches WHERE id = ? AND account_id = ?",
		id, accountID).Scan(&filters, &idCount, &keyCount, &keysVersion)
	if err == sql.ErrNoRows {
		return page, watchNotFound(id)
	}
	if err != nil {
		return page, fmt.Errorf("sqlite: matches of watch %s: %w", id, err)
	}
	wf, err := decodeFilters(filters)
	if err != nil {
		return page, fmt.Errorf("sqlite: watch %s has unreadable filters: %w", id, err)
	}
	f, err := wf.NoticeFilter()
	if err != nil {
		return page, fmt.Errorf("sqlite: watch %s has filters that no longer parse: %w", id, err)
	}
	version, err := registerVersion(ctx, tx)
	if err != nil {
		return page, err
	}
	current := version != "" && version == keysVersion

	need := limit + 1
	var seqs []int64
	switch {
	case idCount == 0:
		seqs, err = filterOnlyMatches(ctx, tx, f, since, need)
	case !current || keyCount <= keyDrivenMax:
		seqs, err = keyDrivenMatches(ctx, tx, f, id, current, since, need)
	default:
		var latest int64
		if err = tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM notices").Scan(&latest); err != nil {
			return page, fmt.Errorf("sqlite: matches of watch %s: %w", id, err)
		}
		hi := windowEnd(since, matchScanWindow)
		seqs, err = scanMatches(ctx, tx, f, id, since, hi, need)
		if err == nil && len(seqs) < need && hi < latest {
			var more []int64
			more, err = keyDrivenMatches(ctx, tx, f, id, current, hi, need-len(seqs))
			seqs = append(seqs, more...)
		}
	}
	if err != nil {
		return page, err
	}
	if len(seqs) > limit {
		page.HasMore = true
		seqs = seqs[:limit]
	}
	if page.Notices, err = noticesBySeq(ctx, tx, seqs); err != nil {
		return page, err
	}
	if n := len(seqs); n > 0 {
		page.NextSince = seqs[n-1]
	}
	return page, nil
}

// windowEnd is since+window, saturated at the int64 maximum (a since near
// it must not wrap round to a negative bound and restart the history).
func windowEnd(since, window int64) int64 {
	if since > math.MaxInt64-window {
		return math.MaxInt64
	}
	return since + window
}

// querySeqs runs a query returning notice seqs.
func querySeqs(ctx context.Context, tx *sql.Tx, what, q string, args []any) ([]int64, error) {
	seqs, err := queryColumn[int64](ctx, tx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", what, searchError(err))
	}
	return seqs, nil
}

// filterOnlyMatches pages through the notices passing f after since.
func filterOnlyMatches(ctx context.Context, tx *sql.Tx, f notice.Filter, since int64, need int) ([]int64, error) {
	c := filterCond(f)
	c.add("n.seq > ?", since)
	where, args := c.where()
	return querySeqs(ctx, tx, "matches of a filter-only watch",
		"SELECT n.seq FROM "+c.from()+where+" ORDER BY n.seq LIMIT ?", append(args, need))
}

// keyDrivenMatches collects the notices after since carrying one of the
// watch's keys, from the acn and abn indexes, then applies f.
func keyDrivenMatches(ctx context.Context, tx *sql.Tx, f notice.Filter, id string, current bool, since int64, need int) ([]int64, error) {
	with, args := watchKeysCTE(id, current)
	with += `, hits(seq) AS (
		SELECT h.seq FROM keys CROSS JOIN notices h WHERE h.acn = keys.v AND h.seq > ?
		UNION SELECT h.seq FROM keys CROSS JOIN notices h WHERE h.abn = keys.v AND h.seq > ?)`
	args = append(args, since, since)
	c := filterCond(f)
	c.add("n.seq IN (SELECT seq FROM hits)")
	where, wargs := c.where()
	return querySeqs(ctx, tx, "matches of watch "+id,
		with+" SELECT n.seq FROM "+c.from()+where+" ORDER BY n.seq LIMIT ?", append(append(args, wargs...), need))
}

// scanMatches walks the notices in (lo, hi] in seq order, probing the
// watch's stored keys.
func scanMatches(ctx context.Context, tx *sql.Tx, f notice.Filter, id string, lo, hi int64, need int) ([]int64, error) {
	c := filterCond(f)
	c.add("n.seq > ?", lo)
	c.add("n.seq <= ?", hi)
	c.add(`(EXISTS (SELECT 1 FROM watch_keys k WHERE k.watch_id = ? AND k.key = n.acn)
		OR EXISTS (SELECT 1 FROM watch_keys k WHERE k.watch_id = ? AND k.key = n.abn))`, id, id)
	where, args := c.where()
	return querySeqs(ctx, tx, "matches of watch "+id,
		"SELECT n.seq FROM "+c.from()+where+" ORDER BY n.seq LIMIT ?", append(args, need))
}
