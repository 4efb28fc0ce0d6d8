package sqlite

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/watch"
)

// describeInsolvency fills in each match's insolvency fields from its
// notices passing the filters (r.passed): their distinct non-empty
// purposes, sorted, and the latest of them whose purpose is not
// Deregistration (newest publication, ties by higher seq, as for the
// latest notice), described as the latest notice is. The purposes come
// from the index when it holds the fields, else from SQL.
func (r *screenRun) describeInsolvency(matched []watch.Matched) error {
	purpose := func(seq int64) string { return r.snap.values[r.snap.notes[seq].purpose] }
	if !r.inMemory {
		ps, err := r.readPurposes()
		if err != nil {
			return err
		}
		purpose = func(seq int64) string { return ps[seq] }
	}
	var need []screenDetail // latest insolvency notices SQL describes
	for k := range r.hits {
		h := &r.hits[k]
		m := &matched[k]
		best, bestOrder := int64(-1), int64(0)
		purposes := []string{}
		for _, seq := range r.passed[h.pFrom:h.pTo] {
			p := purpose(seq)
			if p != "" && !slices.Contains(purposes, p) {
				purposes = append(purposes, p)
			}
			if notice.EqualFoldASCII(p, notice.DeregistrationPurpose) {
				continue
			}
			if o := r.snap.notes[seq].order; best < 0 || o > bestOrder || (o == bestOrder && seq > best) {
				best, bestOrder = seq, o
			}
		}
		slices.Sort(purposes)
		m.NoticePurposes = purposes
		if best < 0 {
			continue
		}
		m.Insolvency = true
		switch {
		case best == h.latest:
			ln := m.LatestNotice
			m.LatestInsolvencyNotice = &ln
		case r.inMemory:
			m.LatestInsolvencyNotice = r.snap.latestNotice(best)
		default:
			need = append(need, screenDetail{k: k, seq: best})
		}
	}
	if len(need) == 0 {
		return nil
	}
	t, err := r.readTx()
	if err != nil {
		return err
	}
	if err := screenDetails(r.ctx, t, need); err != nil {
		return err
	}
	for i := range need {
		matched[need[i].k].LatestInsolvencyNotice = &need[i].notice
	}
	return nil
}

// readPurposes reads the purpose of every notice in r.passed with SQL.
func (r *screenRun) readPurposes() (map[int64]string, error) {
	out := make(map[int64]string, len(r.passed))
	if len(r.passed) == 0 {
		return out, nil
	}
	t, err := r.readTx()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(r.passed)
	if err != nil {
		return nil, err
	}
	rows, err := t.QueryContext(r.ctx, "SELECT seq, coalesce(notice_purpose, '') FROM notices WHERE seq IN (SELECT value FROM json_each(?))", string(b))
	if err != nil {
		return nil, fmt.Errorf("sqlite: screen purposes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var p string
		if err := rows.Scan(&seq, &p); err != nil {
			return nil, err
		}
		out[seq] = p
	}
	return out, rows.Err()
}

// latestNotice describes the notice seq as a screen's latest notice, from
// the snapshot's fields.
func (c *companySnap) latestNotice(seq int64) *watch.LatestNotice {
	n := &c.notes[seq]
	ln := &watch.LatestNotice{ID: string(c.appendNoticeID(nil, seq)), Seq: seq, PublishedDate: c.values[n.date],
		NoticeType: c.values[n.typ], NoticePurpose: c.values[n.purpose]}
	if n.appointment != 0 {
		a := c.values[n.appointment]
		ln.AppointmentType = &a
	}
	return ln
}

// unmatchedCompanies describes the unmatched identifiers (known, no notice
// passing the filters), in the order given: the ACN (the identifier itself
// for an ACN, the register's for an ABN) and the register's current name
// (else its first; none for an empty one, as the scale backend answers),
// from the index when it holds the name, else read with RegisterNames in
// one query.
func (r *screenRun) unmatchedCompanies() ([]watch.UnmatchedCompany, error) {
	out := make([]watch.UnmatchedCompany, 0, r.unmatched)
	var need []int // positions in out whose name SQL reads
	var acns []string
	k := 0
	for i, id := range r.ids {
		fd := &r.found[i]
		if k < len(r.hits) && int(r.hits[k].pos) == i {
			k++
			continue
		}
		if !fd.known {
			continue
		}
		u := watch.UnmatchedCompany{Identifier: id.Value}
		if fd.hasACN {
			acn := id.Value
			if id.Kind != ident.ACN {
				acn = acnString(fd.acn)
			}
			u.ACN = &acn
			if name, ok := r.snap.names.get(fd.acn); ok {
				u.CompanyName = &name
			} else {
				need, acns = append(need, len(out)), append(acns, acnString(fd.acn))
			}
		}
		out = append(out, u)
	}
	if len(need) == 0 {
		return out, nil
	}
	names, err := r.s.RegisterNames(r.ctx, acns)
	if err != nil {
		return nil, err
	}
	for j, at := range need {
		if names[j] != "" {
			out[at].CompanyName = &names[j]
		}
	}
	return out, nil
}
