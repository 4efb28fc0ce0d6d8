package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/webhook"
	"github.com/noticesd/noticesd/matcher"
)

// The delivery queue (migration 0003): one deliveries row per (watch,
// notice) ever, the arrival cursor and the watch-set version in meta. The
// states of a row (scheduled, in flight, held) and the triggers that hold
// and release a watch's deliveries when it is deactivated and reactivated
// are described in migrations/0003_deliveries.sql.

var _ store.Queue = (*Store)(nil)

// Keys of the meta table used by the queue.
const (
	metaArrivalCursor   = "delivery_arrival_cursor"
	metaWatchSetVersion = "webhook_watch_set_version"
)

// ArrivalCursor returns the highest notice_seq already matched.
func (s *Store) ArrivalCursor(ctx context.Context) (int64, error) {
	return metaInt(ctx, s.read, metaArrivalCursor)
}

// WatchSetVersion returns the version of the set of watches with a webhook.
func (s *Store) WatchSetVersion(ctx context.Context) (int64, error) {
	return metaInt(ctx, s.read, metaWatchSetVersion)
}

// metaInt reads an integer meta value; a missing key reads as 0.
func metaInt(ctx context.Context, q querier, key string) (int64, error) {
	var v string
	err := q.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: read %s: %w", key, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sqlite: meta %s holds %q, not an integer; the database is damaged", key, v)
	}
	return n, nil
}

// LatestSeq returns the highest notice_seq stored (0 when none).
func (s *Store) LatestSeq(ctx context.Context) (int64, error) {
	var n int64
	if err := s.read.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM notices").Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: read the latest notice_seq: %w", err)
	}
	return n, nil
}

// NoticesAfter returns up to limit notices with notice_seq > seq, ascending.
func (s *Store) NoticesAfter(ctx context.Context, seq int64, limit int) ([]notice.Notice, error) {
	rows, err := s.read.QueryContext(ctx, "SELECT "+noticeColumns+" FROM notices n WHERE n.seq > ? ORDER BY n.seq LIMIT ?", seq, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read notices after seq %d: %w", seq, err)
	}
	ns, err := scanNotices(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read notices after seq %d: %w", seq, err)
	}
	return ns, nil
}

// WatchSet returns every watch with a webhook as a matcher entry, read in
// one snapshot with its version.
func (s *Store) WatchSet(ctx context.Context) (store.WatchSet, error) {
	tx, err := s.read.BeginTx(ctx, nil)
	if err != nil {
		return store.WatchSet{}, fmt.Errorf("sqlite: load watches with a webhook: %w", err)
	}
	defer tx.Rollback()
	var ws store.WatchSet
	if ws.Version, err = metaInt(ctx, tx, metaWatchSetVersion); err != nil {
		return ws, err
	}
	rows, err := tx.QueryContext(ctx, "SELECT id, active, filters, identifiers FROM watches WHERE webhook_url IS NOT NULL ORDER BY id")
	if err != nil {
		return ws, fmt.Errorf("sqlite: load watches with a webhook: %w", err)
	}
	var abns []string
	for rows.Next() {
		var (
			e            matcher.Entry
			filters, ids string
		)
		if err := rows.Scan(&e.WatchID, &e.Active, &filters, &ids); err != nil {
			rows.Close()
			return ws, fmt.Errorf("sqlite: load watches with a webhook: %w", err)
		}
		if e.Filter, err = noticeFilter(e.WatchID, filters); err != nil {
			rows.Close()
			return ws, err
		}
		if err := json.Unmarshal([]byte(ids), &e.Identifiers); err != nil {
			rows.Close()
			return ws, fmt.Errorf("sqlite: watch %s has unreadable identifiers JSON: %w", e.WatchID, err)
		}
		for _, id := range e.Identifiers {
			if len(id) == 11 {
				abns = append(abns, id)
			}
		}
		ws.Entries = append(ws.Entries, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ws, fmt.Errorf("sqlite: load watches with a webhook: %w", err)
	}
	acnOf, err := resolveABNs(ctx, tx, abns)
	if err != nil {
		return ws, err
	}
	for i := range ws.Entries {
		ws.Entries[i].Identifiers = withResolvedACNs(ws.Entries[i].Identifiers, acnOf)
	}
	return ws, nil
}

// withResolvedACNs adds to ids every register ACN of each ABN in it, as
// matcher.Entry asks.
func withResolvedACNs(ids []string, acnOf map[string][]string) []string {
	out := ids
	for _, id := range ids {
		for _, acn := range acnOf[id] {
			if !slices.Contains(out, acn) {
				out = append(out, acn)
			}
		}
	}
	return out
}

// noticeFilter decodes a watch's stored filters into the notice.Filter the
// matcher applies.
func noticeFilter(watchID, raw string) (notice.Filter, error) {
	f, err := decodeFilters(raw)
	if err != nil {
		return notice.Filter{}, fmt.Errorf("sqlite: watch %s has unreadable filters JSON: %w", watchID, err)
	}
	nf, err := f.NoticeFilter()
	if err != nil {
		return notice.Filter{}, fmt.Errorf("sqlite: watch %s has filters that no longer parse: %w", watchID, err)
	}
	return nf, nil
}

// ResolveABNs returns every register ACN of each ABN the register knows,
// sorted and distinct.
func (s *Store) ResolveABNs(ctx context.Context, abns []string) (map[string][]string, error) {
	return resolveABNs(ctx, s.read, abns)
}

func resolveABNs(ctx context.Context, q querier, abns []string) (map[string][]string, error) {
	out := make(map[string][]string)
	const chunk = 500
	for start := 0; start < len(abns); start += chunk {
		part := abns[start:min(start+chunk, len(abns))]
		args := make([]any, len(part))
		for i, a := range part {
			args[i] = a
		}
		rows, err := q.QueryContext(ctx, "SELECT DISTINCT abn, acn FROM register WHERE abn <> '' AND abn IN ("+placeholders(len(args))+") ORDER BY abn, acn", args...)
		if err != nil {
			return nil, fmt.Errorf("sqlite: resolve ABNs through the register: %w", err)
		}
		for rows.Next() {
			var abn, acn string
			if err := rows.Scan(&abn, &acn); err != nil {
				rows.Close()
				return nil, fmt.Errorf("sqlite: resolve ABNs through the register: %w", err)
			}
			if id, ok := ident.Normalise(acn); ok && id.Kind == ident.ACN && !slices.Contains(out[abn], id.Value) {
				out[abn] = append(out[abn], id.Value)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("sqlite: resolve ABNs through the register: %w", err)
		}
	}
	return out, nil
}

// watchTarget is what Enqueue needs of a matched watch.
type watchTarget struct {
	createdSeq int64
	active     bool
	hasHook    bool
}

// Enqueue creates the deliveries of the eligible (watch, notice) pairs in
// arrivals and advances the arrival cursor to through, in one transaction.
func (s *Store) Enqueue(ctx context.Context, arrivals []store.Arrival, through, version int64, now time.Time) (int, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlite: begin enqueue: %w", err)
	}
	defer tx.Rollback()
	cur, err := metaInt(ctx, tx, metaWatchSetVersion)
	if err != nil {
		return 0, err
	}
	if cur != version {
		return 0, store.ErrWatchSetChanged
	}
	created := 0
	if len(arrivals) > 0 {
		targets := map[string]watchTarget{}
		stmt, err := tx.PrepareContext(ctx, insertDelivery)
		if err != nil {
			return 0, fmt.Errorf("sqlite: prepare delivery insert: %w", err)
		}
		defer stmt.Close()
		ts := notice.Timestamp(now)
		for _, a := range arrivals {
			published, ok := publishedTime(&a.Notice)
			if !ok {
				continue // an unreadable publication time is never within the window
			}
			for _, wid := range a.Watches {
				t, ok := targets[wid]
				if !ok {
					t, err = loadTarget(ctx, tx, wid)
					if err != nil {
						return 0, err
					}
					targets[wid] = t
				}
				if !t.hasHook || !delivery.Eligible(a.Notice.Seq, t.createdSeq, published, delivery.JudgedAt(a.Notice.CollectedAt, now)) {
					continue
				}
				n, err := insertPending(ctx, stmt, wid, &a.Notice, t.active, ts)
				if err != nil {
					return 0, err
				}
				created += n
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = CAST(max(CAST(value AS INTEGER), ?) AS TEXT) WHERE key = ?`,
		through, metaArrivalCursor); err != nil {
		return 0, fmt.Errorf("sqlite: advance the arrival cursor to %d: %w", through, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: commit enqueue: %w", err)
	}
	return created, nil
}

// loadTarget reads a watch's created_seq, active and whether it has a
// webhook. A deleted watch has no webhook.
func loadTarget(ctx context.Context, tx *sql.Tx, watchID string) (watchTarget, error) {
	var t watchTarget
	err := tx.QueryRowContext(ctx, "SELECT created_seq, active, webhook_url IS NOT NULL FROM watches WHERE id = ?", watchID).
		Scan(&t.createdSeq, &t.active, &t.hasHook)
	if err == sql.ErrNoRows {
		return watchTarget{}, nil
	}
	if err != nil {
		return t, fmt.Errorf("sqlite: read watch %s: %w", watchID, err)
	}
	return t, nil
}

// insertDelivery creates a pending delivery unless the pair already has one.
const insertDelivery = `INSERT INTO deliveries (id, watch_id, notice_id, notice_seq, status, attempts,
	created_at, updated_at, next_attempt_at)
VALUES (?, ?, ?, ?, 'pending', 0, ?, ?, ?)
ON CONFLICT DO NOTHING`

// insertPending creates the delivery of n to watchID: due at once when the
// watch is active, held otherwise. It returns 1 when a row was created.
func insertPending(ctx context.Context, stmt *sql.Stmt, watchID string, n *notice.Notice, active bool, ts string) (int, error) {
	var next any
	if active {
		next = ts
	}
	res, err := stmt.ExecContext(ctx, webhook.DeliveryID(watchID, n.ID), watchID, n.ID, n.Seq, ts, ts, next)
	if err != nil {
		return 0, fmt.Errorf("sqlite: queue notice %s for watch %s: %w", n.ID, watchID, err)
	}
	k, _ := res.RowsAffected()
	return int(k), nil
}

// publishedTime parses a notice's published_at (a notice.Timestamp, or an
// RFC 3339 time), falling back to the start of its Sydney published_date.
func publishedTime(n *notice.Notice) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, n.PublishedAt); err == nil {
		return t, true
	}
	if t, err := time.ParseInLocation(notice.DateLayout, n.PublishedDate, notice.Sydney); err == nil {
		return t, true
	}
	return time.Time{}, false
}

// Recover releases every lease: deliveries of active watches are due at
// now, those of inactive watches are held.
func (s *Store) Recover(ctx context.Context, now time.Time) (int, error) {
	ts := notice.Timestamp(now)
	res, err := s.write.ExecContext(ctx, `UPDATE deliveries SET lease_until = NULL, updated_at = ?,
		next_attempt_at = CASE WHEN (SELECT active FROM watches w WHERE w.id = deliveries.watch_id) THEN ? END,
		attempts = CASE WHEN claim_token IS NOT NULL THEN max(attempts - 1, 0) ELSE attempts END,
		claim_token = NULL
		WHERE lease_until IS NOT NULL AND status = 'pending'`, ts, ts)
	if err != nil {
		return 0, fmt.Errorf("sqlite: release delivery leases: %w", s.busy(err))
	}
	if _, err := s.write.ExecContext(ctx, "UPDATE deliveries SET lease_until = NULL, claim_token = NULL WHERE lease_until IS NOT NULL"); err != nil {
		return 0, fmt.Errorf("sqlite: release delivery leases: %w", s.busy(err))
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// Claim leases due deliveries of active watches with a webhook.
func (s *Store) Claim(ctx context.Context, now time.Time, req store.ClaimRequest) ([]store.Job, error) {
	if req.Limit <= 0 {
		return nil, nil
	}
	ts := notice.Timestamp(now)
	until := notice.Timestamp(now.Add(req.Lease))
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: begin claim: %w", err)
	}
	defer tx.Rollback()

	ids, err := dueDeliveries(ctx, tx, ts, req)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, nil
	}
	idArgs := make([]any, len(ids))
	lease, err := tx.PrepareContext(ctx, "UPDATE deliveries SET lease_until = ?, next_attempt_at = ?, attempts = attempts + 1, claim_token = ?, updated_at = ? WHERE id = ?")
	if err != nil {
		return nil, fmt.Errorf("sqlite: lease due deliveries: %w", err)
	}
	defer lease.Close()
	for i, id := range ids {
		idArgs[i] = id
		if _, err := lease.ExecContext(ctx, until, until, newClaimToken(), ts, id); err != nil {
			return nil, fmt.Errorf("sqlite: lease delivery %s: %w", id, err)
		}
	}
	rows, err := tx.QueryContext(ctx, `SELECT d.id, d.watch_id, w.webhook_url, w.webhook_secret, d.attempts, d.claim_token, `+noticeColumns+`
		FROM deliveries d JOIN watches w ON w.id = d.watch_id JOIN notices n ON n.seq = d.notice_seq
		WHERE d.id IN (`+placeholders(len(ids))+`)`, idArgs...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read claimed deliveries: %w", err)
	}
	byID := make(map[string]store.Job, len(ids))
	for rows.Next() {
		var j store.Job
		n, err := scanNotice(prefixScanner{rows, []any{&j.DeliveryID, &j.WatchID, &j.URL, &j.Secret, &j.Attempt, &j.Token}})
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: read claimed deliveries: %w", err)
		}
		j.Notice = n
		if j.Secret, err = s.openSecret(j.WatchID, j.Secret); err != nil {
			rows.Close()
			return nil, err
		}
		byID[j.DeliveryID] = j
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: read claimed deliveries: %w", err)
	}
	jobs := make([]store.Job, 0, len(ids))
	for _, id := range ids {
		if j, ok := byID[id]; ok {
			jobs = append(jobs, j)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: commit claim: %w", err)
	}
	return jobs, nil
}

// dueDeliveries chooses the deliveries one Claim leases, fairly across
// watches: the active watches with a webhook and a delivery due at ts, in
// the order of each one's oldest due delivery (at most req.Limit of them),
// then round by round one more delivery of each (its oldest due first)
// until req.Limit, each watch bounded by req.PerWatch minus its attempts
// in flight. Every watch with a due delivery is therefore served within a
// claim or two, however large another watch's backlog (issue 15, defect
// 2). The cost is one index probe per watch with a webhook plus the rows
// taken.
func dueDeliveries(ctx context.Context, tx *sql.Tx, ts string, req store.ClaimRequest) ([]string, error) {
	q := `SELECT id FROM (SELECT w.id, (SELECT min(d.next_attempt_at) FROM deliveries d
			WHERE d.watch_id = w.id AND d.status = 'pending' AND d.next_attempt_at IS NOT NULL) AS due
		FROM watches w WHERE w.active AND w.webhook_url IS NOT NULL)
		WHERE due <= ?`
	args := []any{ts}
	allowance := func(wid string) int { return req.Limit }
	if req.PerWatch > 0 {
		var busy []any
		for wid, n := range req.InFlight {
			if n >= req.PerWatch {
				busy = append(busy, wid)
			}
		}
		if len(busy) > 0 {
			q += " AND id NOT IN (" + placeholders(len(busy)) + ")"
			args = append(args, busy...)
		}
		allowance = func(wid string) int { return min(req.Limit, req.PerWatch-req.InFlight[wid]) }
	}
	q += " ORDER BY due, id LIMIT ?"
	args = append(args, req.Limit)
	watches, err := queryColumn[string](ctx, tx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find watches with due deliveries: %w", err)
	}
	perWatch := make([][]string, len(watches))
	for i, wid := range watches {
		perWatch[i], err = queryColumn[string](ctx, tx, `SELECT id FROM deliveries
			WHERE watch_id = ? AND status = 'pending' AND next_attempt_at IS NOT NULL AND next_attempt_at <= ?
			ORDER BY next_attempt_at, notice_seq LIMIT ?`, wid, ts, allowance(wid))
		if err != nil {
			return nil, fmt.Errorf("sqlite: find due deliveries of watch %s: %w", wid, err)
		}
	}
	var ids []string
	for round := 0; len(ids) < req.Limit; round++ {
		took := false
		for _, ds := range perWatch {
			if round < len(ds) && len(ids) < req.Limit {
				ids, took = append(ids, ds[round]), true
			}
		}
		if !took {
			break
		}
	}
	return ids, nil
}

// newClaimToken returns a random token naming one claim of a delivery.
func newClaimToken() string {
	return rand.Text()
}

// prefixScanner scans leading columns into prefix and the rest into the
// destinations its caller passes (scanNotice's).
type prefixScanner struct {
	r      scanner
	prefix []any
}

func (p prefixScanner) Scan(dest ...any) error {
	return p.r.Scan(append(append([]any(nil), p.prefix...), dest...)...)
}

// Complete records the outcome of one attempt. The outcome of a stale
// attempt (job.Token is no longer the delivery's claim: its lease expired
// and a newer attempt was claimed) is still recorded: a success delivers,
// a failure is noted in last_error and leaves the schedule to the newer
// attempt.
func (s *Store) Complete(ctx context.Context, job store.Job, out store.Outcome, now time.Time) error {
	ts := notice.Timestamp(now)
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: begin completing delivery %s: %w", job.DeliveryID, err)
	}
	defer tx.Rollback()
	var (
		status   string
		attempts int
		token    sql.NullString
		active   bool
	)
	err = tx.QueryRowContext(ctx, `SELECT d.status, d.attempts, d.claim_token, w.active FROM deliveries d JOIN watches w ON w.id = d.watch_id WHERE d.id = ?`,
		job.DeliveryID).Scan(&status, &attempts, &token, &active)
	if err == sql.ErrNoRows {
		return nil // the watch was deleted meanwhile
	}
	if err != nil {
		return fmt.Errorf("sqlite: read delivery %s: %w", job.DeliveryID, err)
	}
	if status != delivery.Pending {
		return nil // finished meanwhile (delivered by another attempt, dead, webhook removed)
	}
	if !token.Valid || job.Token == "" || token.String != job.Token {
		// A stale attempt (its lease expired and a newer attempt was
		// claimed, or its outcome was already recorded): the newer attempt
		// owns the schedule, but this outcome is still recorded.
		if err := recordStale(ctx, tx, job, out, ts); err != nil {
			return err
		}
		return tx.Commit()
	}
	n := attempts // counted when claimed
	d := delivery.Decide(n, out.OK, out.LastError, out.RetryUnit)
	switch d.Status {
	case delivery.Delivered:
		if err := recordDelivered(ctx, tx, job, sentAt(out, ts), ts); err != nil {
			return err
		}
	case delivery.Pending:
		var next any
		if active {
			next = notice.Timestamp(now.Add(d.Wait))
		}
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET attempts = ?, last_error = ?, updated_at = ?,
			next_attempt_at = ?, lease_until = NULL, claim_token = NULL WHERE id = ?`, n, d.LastError, ts, next, job.DeliveryID); err != nil {
			return fmt.Errorf("sqlite: reschedule delivery %s: %w", job.DeliveryID, err)
		}
	default:
		if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'dead', attempts = ?, last_error = ?, updated_at = ?,
			next_attempt_at = NULL, lease_until = NULL, claim_token = NULL WHERE id = ?`, n, d.LastError, ts, job.DeliveryID); err != nil {
			return fmt.Errorf("sqlite: record delivery %s dead: %w", job.DeliveryID, err)
		}
		if err := countFailedNotice(ctx, tx, job.WatchID, d.LastError, now); err != nil {
			return err
		}
	}
	if d.Status != delivery.Pending {
		if err := trimDeliveries(ctx, tx, job.WatchID, now); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit the outcome of delivery %s: %w", job.DeliveryID, err)
	}
	return nil
}

// sentAt is the delivered_at of a delivered outcome: the time its body
// says it was sent, or ts when the outcome does not say.
func sentAt(out store.Outcome, ts string) string {
	if out.SentAt.IsZero() {
		return ts
	}
	return notice.Timestamp(out.SentAt)
}

// recordDelivered marks a pending delivery delivered (delivered_at the time
// the delivered body was sent, updated_at ts) and starts the watch's count
// of consecutive failed notices afresh.
func recordDelivered(ctx context.Context, tx *sql.Tx, job store.Job, deliveredAt, ts string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE deliveries SET status = 'delivered', delivered_at = ?,
		updated_at = ?, next_attempt_at = NULL, lease_until = NULL, claim_token = NULL WHERE id = ?`, deliveredAt, ts, job.DeliveryID); err != nil {
		return fmt.Errorf("sqlite: record delivery %s delivered: %w", job.DeliveryID, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE watches SET consecutive_failures = 0 WHERE id = ? AND consecutive_failures <> 0", job.WatchID); err != nil {
		return fmt.Errorf("sqlite: reset the failure count of watch %s: %w", job.WatchID, err)
	}
	return nil
}

// recordStale records the outcome of an attempt that no longer holds the
// delivery's claim: a success delivers it (the endpoint has the notice;
// the newer attempt's outcome is then ignored), a failure is noted in
// last_error without touching the schedule, which the newer attempt owns.
func recordStale(ctx context.Context, tx *sql.Tx, job store.Job, out store.Outcome, ts string) error {
	if out.OK {
		return recordDelivered(ctx, tx, job, sentAt(out, ts), ts)
	}
	lastErr := delivery.Decide(job.Attempt, false, out.LastError, out.RetryUnit).LastError
	if _, err := tx.ExecContext(ctx, "UPDATE deliveries SET last_error = ?, updated_at = ? WHERE id = ?",
		fmt.Sprintf("attempt %d: %s", job.Attempt, lastErr), ts, job.DeliveryID); err != nil {
		return fmt.Errorf("sqlite: record the failure of stale attempt %d of delivery %s: %w", job.Attempt, job.DeliveryID, err)
	}
	return nil
}

// countFailedNotice adds one to the watch's consecutive failed notices and
// deactivates it at delivery.DeactivateAfter (the hold trigger then holds
// its scheduled deliveries), queueing the watch's deactivation alert in the
// same transaction when it has an alert_email.
func countFailedNotice(ctx context.Context, tx *sql.Tx, watchID, lastErr string, now time.Time) error {
	var n int
	if err := tx.QueryRowContext(ctx, "UPDATE watches SET consecutive_failures = consecutive_failures + 1 WHERE id = ? RETURNING consecutive_failures",
		watchID).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: count a failed notice of watch %s: %w", watchID, err)
	}
	if !delivery.Deactivates(n) {
		return nil
	}
	reason := delivery.DeactivationReason(n, lastErr)
	res, err := tx.ExecContext(ctx, "UPDATE watches SET active = 0, deactivated_reason = ?, updated_at = ? WHERE id = ? AND active",
		reason, notice.Timestamp(now), watchID)
	if err != nil {
		return fmt.Errorf("sqlite: deactivate watch %s: %w", watchID, err)
	} else if k, _ := res.RowsAffected(); k == 0 {
		return nil // already inactive: no second alert
	}
	return queueDeactivated(ctx, tx, watchID, reason, lastErr, now)
}

// NextDue returns when the earliest scheduled delivery is due.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullString
	err := s.read.QueryRowContext(ctx, `SELECT min(next_attempt_at) FROM deliveries
		WHERE status = 'pending' AND next_attempt_at IS NOT NULL`).Scan(&next)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: read the next due delivery: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	t, err := time.Parse(time.RFC3339Nano, next.String)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("sqlite: a delivery has next_attempt_at %q, not a timestamp; the database is damaged", next.String)
	}
	return t, true, nil
}

// trimDeliveries removes, among the watch's oldest delivery.TrimStep final
// (delivered or dead) records beyond its newest delivery.KeepRecords final
// ones, those created more than delivery.KeepAge before now: the rule the
// Redis store applies in the same step, so both keep the same records.
func trimDeliveries(ctx context.Context, tx *sql.Tx, watchID string, now time.Time) error {
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM deliveries WHERE watch_id = ? AND status <> 'pending'", watchID).Scan(&n); err != nil {
		return fmt.Errorf("sqlite: count the deliveries of watch %s: %w", watchID, err)
	}
	over := min(n-delivery.KeepRecords, delivery.TrimStep)
	if over <= 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM deliveries WHERE id IN (
		SELECT id FROM deliveries WHERE watch_id = ? AND status <> 'pending' ORDER BY created_at, notice_seq LIMIT ?)
		AND created_at < ?`, watchID, over, notice.Timestamp(now.Add(-delivery.KeepAge)))
	if err != nil {
		return fmt.Errorf("sqlite: trim the deliveries of watch %s: %w", watchID, err)
	}
	return nil
}
