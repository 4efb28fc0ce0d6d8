package sqlite

import (
	"context"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// Gauges implements store.GaugeSource for /metrics. The delivery counts
// scan the deliveries table (one pass, no index covers status alone), so a
// scrape costs time in proportion to the deliveries stored, on a reader
// connection; nothing is written.
func (s *Store) Gauges(ctx context.Context) (store.Gauges, error) {
	var g store.Gauges
	now := notice.Timestamp(s.clock())
	err := s.read.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM accounts WHERE active = 1),
		(SELECT count(*) FROM accounts WHERE active = 0),
		(SELECT count(*) FROM watches WHERE active = 1),
		(SELECT count(*) FROM watches WHERE active = 0),
		(SELECT count(*) FROM deliveries WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ? AND status = 'pending')`, now).
		Scan(&g.AccountsActive, &g.AccountsLapsed, &g.WatchesActive, &g.WatchesInactive, &g.QueueDue)
	if err != nil {
		return g, fmt.Errorf("sqlite: read gauges: %w", err)
	}
	err = s.read.QueryRowContext(ctx, `SELECT
		coalesce(sum(status = 'pending'), 0), coalesce(sum(status = 'delivered'), 0), coalesce(sum(status = 'dead'), 0),
		coalesce(sum(status = 'pending' AND attempts > 0), 0)
		FROM deliveries`).Scan(&g.DeliveriesPending, &g.DeliveriesDelivered, &g.DeliveriesDead, &g.RetryBacklog)
	if err != nil {
		return g, fmt.Errorf("sqlite: read delivery gauges: %w", err)
	}
	err = s.read.QueryRowContext(ctx, `SELECT coalesce(sum(status = 'pending'), 0), coalesce(sum(status = 'dead'), 0) FROM mail_jobs`).
		Scan(&g.MailPending, &g.MailDead)
	if err != nil {
		return g, fmt.Errorf("sqlite: read mail gauges: %w", err)
	}
	return g, nil
}

var _ store.GaugeSource = (*Store)(nil)
