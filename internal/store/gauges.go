package store

import "context"

// Gauges are the stored counts /metrics reports at scrape time, read from
// the backend so every replica reports the same numbers.
type Gauges struct {
	// AccountsActive and AccountsLapsed count accounts by subscription.
	AccountsActive, AccountsLapsed int64
	// WatchesActive and WatchesInactive count watches by state.
	WatchesActive, WatchesInactive int64
	// DeliveriesPending, DeliveriesDelivered and DeliveriesDead count
	// webhook deliveries by status.
	DeliveriesPending, DeliveriesDelivered, DeliveriesDead int64
	// QueueDue counts pending deliveries due now (the queue depth).
	QueueDue int64
	// RetryBacklog counts pending deliveries that failed at least once.
	RetryBacklog int64
	// MailPending and MailDead count alert_email mail jobs pending and
	// given up.
	MailPending, MailDead int64
}

// GaugeSource reads Gauges; every backend implements it.
type GaugeSource interface {
	Gauges(ctx context.Context) (Gauges, error)
}
