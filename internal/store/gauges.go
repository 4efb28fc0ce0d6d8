package store

import "context"

// Gauges are the operational counts /metrics reports at scrape time: what
// is stored now, read from the backend rather than kept by the process, so
// every replica of the scale backend reports the same shared numbers.
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
	// RetryBacklog counts pending deliveries that have failed at least
	// once and wait for a retry.
	RetryBacklog int64
	// MailPending and MailDead count alert_email mail jobs waiting to be
	// accepted by the SMTP server and given up (docs/email.md).
	MailPending, MailDead int64
}

// GaugeSource reads Gauges; every backend implements it.
type GaugeSource interface {
	Gauges(ctx context.Context) (Gauges, error)
}
