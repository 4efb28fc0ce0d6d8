package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
)

// Notice returns one notice by its public id, or errs.NotFound.
func (s *Store) Notice(ctx context.Context, id string) (notice.Notice, error) {
	n, err := scanNotice(s.read.QueryRowContext(ctx, "SELECT "+noticeColumns+" FROM notices n WHERE n.id = ?", id))
	if err == sql.ErrNoRows {
		return n, errs.New(errs.NotFound, "no notice has id %s; ids look like ntc_ followed by 16 characters, as returned by search", errs.Quote(id))
	}
	if err != nil {
		return n, fmt.Errorf("sqlite: read notice %s: %w", id, err)
	}
	return n, nil
}

// Company returns the company view: the register data (the row of the current
// name, with the other names as former_names in file order) and every notice
// of the company, newest first. An ABN is resolved to its ACN through the
// register; acn and abn come from the register, else from the newest notice
// carrying the other identifier. The name is the register's current name,
// else the newest notice's company_name. A well-formed identifier with a bad
// check digit is looked up like any other. errs.NotFound only when neither
// the register nor the notices hold anything for it.
func (s *Store) Company(ctx context.Context, id ident.ID) (notice.Company, error) {
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return notice.Company{}, fmt.Errorf("sqlite: company %s: %w", id.Value, err)
	}
	defer tx.Rollback()

	regs, err := registerRows(ctx, tx, id)
	if err != nil {
		return notice.Company{}, err
	}
	term, args := companyCond(id)
	rows, err := tx.QueryContext(ctx, "SELECT "+noticeColumns+" FROM notices n WHERE "+term+
		" ORDER BY n.published_date DESC, n.published_at DESC, n.seq DESC", args...)
	if err != nil {
		return notice.Company{}, fmt.Errorf("sqlite: notices of company %s: %w", id.Value, err)
	}
	ns, err := scanNotices(rows)
	if err != nil {
		return notice.Company{}, fmt.Errorf("sqlite: notices of company %s: %w", id.Value, err)
	}
	if len(regs) == 0 && len(ns) == 0 {
		return notice.Company{}, errs.New(errs.NotFound,
			"no company with %s %s in the register or the notices; check the number (a company's ABN is two digits followed by its ACN)", id.Kind, id.Value)
	}

	regRows := make([]notice.RegisterRow, len(regs))
	for i, r := range regs {
		regRows[i] = *r
	}
	return notice.BuildCompany(id, regRows, ns), nil
}

// registerRows returns the register rows of the company an identifier names,
// in file order. For an ABN, the rows of the first ACN it maps to.
func registerRows(ctx context.Context, tx *sql.Tx, id ident.ID) ([]*notice.RegisterRow, error) {
	q := "SELECT " + registerColumns + " FROM register WHERE acn = ? ORDER BY rowid"
	acn := id.Value
	if id.Kind == ident.ABN {
		// abn <> '' lets the planner use the partial index on abn.
		err := tx.QueryRowContext(ctx, "SELECT acn FROM register WHERE abn = ? AND abn <> '' ORDER BY rowid LIMIT 1", id.Value).Scan(&acn)
		if err == sql.ErrNoRows {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("sqlite: register lookup of ABN %s: %w", id.Value, err)
		}
	}
	rows, err := tx.QueryContext(ctx, q, acn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: register lookup of %s %s: %w", id.Kind, id.Value, err)
	}
	defer rows.Close()
	var out []*notice.RegisterRow
	for rows.Next() {
		r := &notice.RegisterRow{}
		if err := rows.Scan(&r.CompanyName, &r.ACN, &r.Type, &r.Class, &r.SubClass, &r.Status,
			&r.RegisteredOn, &r.DeregisteredOn, &r.PreviousState, &r.StateRegistrationNumber,
			&r.ModifiedSinceLastReport, &r.CurrentNameIndicator, &r.ABN, &r.CurrentName, &r.CurrentNameStart); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
