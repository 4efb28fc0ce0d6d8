// Package publog is scale mode's write path in Redis: one writer at a time
// under a lease whose epoch versions every document it writes, and one
// publish log that everything reading notices follows. A publish under a
// lost lease is refused (ErrStale); a writer that dies between its write
// and its publish leaves Dirty, and the next one takes over (publishes) what
// it left. docs/elasticsearch.md, "Writing notices", tells the whole.
package publog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
)

// DefaultLeaseTTL is how long the writer lease outlives its holder's last
// renewal: a dead writer's lease is taken over within this time.
const DefaultLeaseTTL = 30 * time.Second

// DefaultRetention is how long the log keeps an entry.
const DefaultRetention = 24 * time.Hour

// callTimeout bounds every Redis call, so a Redis that hangs gives
// errs.BackendUnavailable instead of a stuck writer.
const callTimeout = 5 * time.Second

// Options set a Log up; the zero value is the defaults: LeaseTTL the
// lease's time to live (DefaultLeaseTTL), RenewEvery how often its holder
// renews it (a third of LeaseTTL; tests set it past LeaseTTL to play a
// writer cut off from Redis), Retention how long the log keeps an entry
// (DefaultRetention), Who this process's name in the lease, and Waiting,
// when set, is told who holds the lease while this process waits (once per
// holder).
type Options struct {
	LeaseTTL, RenewEvery, Retention time.Duration
	Who                             string
	Waiting                         func(who string)
}

// Log is the writer lease, the counters and the publish log of one
// namespace.
type Log struct {
	rdb  redis.UniversalClient
	keys Keys
	opt  Options

	mu   sync.Mutex
	last *Turn  // the last place taken (Turn)
	open *Lease // the lease a turn holds that later turns may join
}

// New returns the log of namespace ns on rdb.
func New(rdb redis.UniversalClient, ns string, opt Options) *Log {
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = DefaultLeaseTTL
	}
	if opt.RenewEvery <= 0 {
		opt.RenewEvery = opt.LeaseTTL / 3
	}
	if opt.Retention <= 0 {
		opt.Retention = DefaultRetention
	}
	if opt.Who == "" {
		opt.Who = "a writer"
	}
	return &Log{rdb: rdb, keys: KeysFor(ns), opt: opt}
}

// Keys returns the log's keys.
func (l *Log) Keys() Keys { return l.keys }

// Published returns the highest notice_seq published (0 before any). A
// namespace the fenced writer of earlier versions wrote, and this one not
// yet, answers with that writer's watermark (read on its own: the two
// keys are in different slots of a Redis Cluster).
func (l *Log) Published(ctx context.Context) (int64, error) {
	n, err := l.getInt(ctx, l.keys.Published)
	if err != nil || n > 0 {
		return n, err
	}
	return l.getInt(ctx, l.keys.OldWatermark)
}

// DataVersion returns the version of the notices' searchable data: every
// publish raises it, so an answer read while the version was v is still the
// answer for as long as DataVersion returns v.
func (l *Log) DataVersion(ctx context.Context) (int64, error) {
	return l.getInt(ctx, l.keys.Version)
}

// Changed raises the data version: call it after a change to what the
// notices' reads depend on that is not a publish (a reindex's swap).
func (l *Log) Changed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := l.rdb.Incr(ctx, l.keys.Version).Err(); err != nil {
		return Unavailable(err)
	}
	return nil
}

func (l *Log) getInt(ctx context.Context, key string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	n, err := l.rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, Unavailable(err)
	}
	return n, nil
}

// Unavailable wraps a Redis failure as errs.BackendUnavailable.
func Unavailable(err error) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	return fmt.Errorf("%w (%v)", errs.New(errs.BackendUnavailable,
		"the Redis server cannot be reached or did not answer in time; retry shortly"), err)
}
