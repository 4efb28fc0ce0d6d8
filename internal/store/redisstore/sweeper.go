package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/lease"
)

// A create (its wpend entry) or a delete (its trash entry) that has not
// renewed its lease for createLease is taken for stopped and undone or
// finished by a sweep (the Sweeper every sweepEvery, Reconcile, or a create
// of the account it would refuse). A live one renews every leaseRenewal,
// so only four failed renewals in a row lose it; a dead create stops
// counting against its plan within createLease + sweepEvery (7 s).
const (
	createLease  = 6 * time.Second
	leaseRenewal = createLease / 4
	sweepEvery   = time.Second
)

// renewLease keeps id's entry in the account's lease zset (wpend or
// trash) ahead of the clock until stopped, only while it is there (ZADD
// XX): an undone create stays undone. The account's note in wake:<queue>
// stays at the first lease's end: a sweep then finds the lease renewed
// and notes the account again at its earliest lease (eachWoken).
func (s *Store) renewLease(zset, id string) (stop func()) {
	return lease.Keep(s.leaseRenewal, func(ctx context.Context) {
		s.rdb.ZAddXX(ctx, zset, redis.Z{Score: float64(s.clock().Add(createLease).UnixMilli()), Member: id})
	})
}

// lapsedScript takes the entry ARGV[3] of an account's lease zset if its
// lease ran out by ARGV[1] (ms), renewing it to ARGV[2] so one sweep has
// it; nil when it is not lapsed. With KEYS[2] (w:<id>, a create) it marks
// the watch (field undo) so that its creator, should it go on, writes
// nothing more and never finishes it (cseqScript, index,
// finishCreateScript refuse); or it drops the entry and returns "" when
// the watch is gone. KEYS (the account's): wpend or trash[, w:<id>].
var lapsedScript = redis.NewScript(`
local sc = redis.call('ZSCORE', KEYS[1], ARGV[3])
if not sc or tonumber(sc) > tonumber(ARGV[1]) then return false end
if KEYS[2] then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    redis.call('ZREM', KEYS[1], ARGV[3])
    return ''
  end
  redis.call('HSET', KEYS[2], 'undo', '1')
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[3])
return '1'
`)

// sweepLapsed claims each entry of account acct's lease zset q (wpend or
// trash, up to 100) whose lease ran out by now, calls finish with it, and
// returns how many it claimed. what and step name the read and the claim.
func (s *Store) sweepLapsed(ctx context.Context, acct, q string, now time.Time, what, step string, finish func(id string) error) (int, error) {
	zset := s.akey(acct, q)
	ids, err := s.rdb.ZRangeByScore(ctx, zset, &redis.ZRangeBy{Min: "-inf", Max: itoa(now.UnixMilli()), Count: 100}).Result()
	if err != nil {
		return 0, s.fail("read the unfinished watch "+what, err)
	}
	done := 0
	for _, id := range ids {
		keys := []string{zset}
		if q == createsKey {
			keys = append(keys, s.akey(acct, watchKey, id))
		}
		got, err := lapsedScript.Run(ctx, s.rdb, keys, now.UnixMilli(), now.Add(createLease).UnixMilli(), id).Text()
		if errors.Is(err, redis.Nil) {
			continue // renewed or finished since the read
		}
		if err != nil {
			return done, s.fail(step, err)
		}
		if got != "" {
			if err := finish(id); err != nil {
				return done, err
			}
		}
		done++
	}
	return done, nil
}

// undoStalledCreates deletes the account's watches whose create stopped
// before it finished: the client never had a 201, and a create happens
// whole or not at all, as in the embedded store. It returns how many it
// undid.
func (s *Store) undoStalledCreates(ctx context.Context, acct string, now time.Time) (int, error) {
	return s.sweepLapsed(ctx, acct, createsKey, now, "creates", "undo an unfinished watch create", func(id string) error {
		if err := s.deleteWatch(ctx, acct, id, false); !errs.Is(err, errs.NotFound) {
			return err // nil too
		}
		return nil
	})
}

// SweepStalled undoes every create and finishes every delete (removes the
// watch's remains) whose lease ran out by now, in the accounts wake:wpend
// and wake:trash name due, and returns how many; one failing holds up no
// other.
func (s *Store) SweepStalled(ctx context.Context, now time.Time) (int, error) {
	n := 0
	undoErr := s.eachWoken(ctx, wakeCreate, now, 100, func(acct string) error {
		k, err := s.undoStalledCreates(ctx, acct, now)
		n += k
		return err
	})
	trashErr := s.eachWoken(ctx, wakeTrash, now, 100, func(acct string) error {
		k, err := s.sweepLapsed(ctx, acct, trashKey, now, "deletes", "finish a watch delete", func(id string) error {
			return s.finishDelete(ctx, acct, id)
		})
		n += k
		return err
	})
	return n, errors.Join(undoErr, trashErr)
}

// Sweeper is a part of `serve` in scale mode: every sweepEvery it runs
// SweepStalled, so a create or delete cut short by a dead replica stops
// counting against its plan within seconds, not at the worker's Reconcile
// (every 30 s). Every replica runs one; lapsedScript gives each stalled
// change to one sweep. Finding nothing costs two wake-set claims.
type Sweeper struct {
	s   *Store
	log *slog.Logger
	// ticks starts the sweep's timer (a ticker, or a test's channel).
	ticks func() (c <-chan time.Time, stop func())
	// swept, when set (tests), is told each sweep's outcome.
	swept func(n int, err error)

	loop
}

// Sweeper returns the store's sweeper of stalled creates and deletes (not
// started); log reports a sweep that fails and the one that next succeeds.
func (s *Store) Sweeper(log *slog.Logger) *Sweeper {
	return &Sweeper{s: s, log: log, ticks: func() (<-chan time.Time, func()) {
		t := time.NewTicker(sweepEvery)
		return t.C, t.Stop
	}}
}

// Start sweeps at every tick until Shutdown.
func (w *Sweeper) Start(ctx context.Context) error {
	w.start(context.WithoutCancel(ctx), func(ctx context.Context) {
		ticks, stop := w.ticks()
		defer stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticks:
			}
			n, err := w.s.SweepStalled(ctx, w.s.clock())
			if ctx.Err() != nil {
				return
			}
			switch {
			case err != nil && !failing:
				w.log.Warn("sweeping stalled watch creates and deletes (retried every second)", "err", err)
			case err == nil && failing:
				w.log.Info("sweeping stalled watch creates and deletes works again")
			}
			failing = err != nil
			if w.swept != nil {
				w.swept(n, err)
			}
		}
	})
	return nil
}
