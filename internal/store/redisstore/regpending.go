package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// One register generation everywhere. A scale-mode register load commits
// in two stores: Elasticsearch moves its register alias to the new index
// (the company view reads it), then Redis switches reg:v to the new
// generation (the bulk screen and watch matching read it). A process that
// dies between the two leaves them on different registers. So before the
// first step the load writes
//
//	reg:pending        JSON {"v": Redis generation, "index": Elasticsearch index}
//	reg:pending:lease  the loader's lease on it (pendingLease, renewed
//	                   while the Elasticsearch step runs)
//
// and the Redis step deletes both. CompleteRegister, run when any scale
// process opens its stores and by the workers' sweep, finishes what a dead
// loader (marker present, lease gone) left: if the register alias names
// the marker's index, the Elasticsearch step happened and the Redis switch
// is made; otherwise it did not, and the unused Redis generation is
// dropped. Either way both stores are on one register again.

// pendingLease is how long a register load's marker is protected without
// renewal: longer than any one call of the Elasticsearch commit step.
const pendingLease = time.Minute

// PendingRegister is the marker of a register load between its two commit
// steps.
type PendingRegister struct {
	// Version is the Redis generation being switched to.
	Version string `json:"v"`
	// Index is the Elasticsearch index the register alias moves to.
	Index string `json:"index"`
}

// RegisterIndexer is what CompleteRegister needs of the notice store: the
// indices its register alias names now (the Elasticsearch store).
type RegisterIndexer interface {
	RegisterIndices(ctx context.Context) ([]string, error)
}

// markRegisterPending writes the marker and its lease before the
// Elasticsearch step of a load, and returns the renewal's stop.
func (s *Store) markRegisterPending(ctx context.Context, p PendingRegister) (stop func(), err error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	_, err = s.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
		pp.Set(ctx, s.key(regKey, "pending"), b, 0)
		pp.Set(ctx, s.key(regKey, "pending", "lease"), p.Version, pendingLease)
		return nil
	})
	if err != nil {
		return nil, s.fail("mark the register load pending", err)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(pendingLease / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(context.Background(), pendingLease/3)
				s.rdb.PExpire(rctx, s.key(regKey, "pending", "lease"), pendingLease)
				cancel()
			}
		}
	}()
	return func() { close(done); <-finished }, nil
}

// clearRegisterPending deletes the marker of generation v (and its lease)
// once Redis has switched to it, or the load was rolled back.
var clearPendingScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and cjson.decode(cur).v == ARGV[1] then redis.call('DEL', KEYS[1], KEYS[2]) end
return 1`)

// abandonPendingScript deletes the marker of generation ARGV[1] when it
// still names it, its lease is gone and readers do not use it, and answers
// 1 when it did. KEYS: reg:pending, reg:pending:lease, reg:v.
var abandonPendingScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if not cur or redis.call('EXISTS', KEYS[2]) == 1 or redis.call('GET', KEYS[3]) == ARGV[1] then return 0 end
local ok, m = pcall(cjson.decode, cur)
if not ok or type(m) ~= 'table' or m.v ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1`)

// stillPending returns nil when the marker names generation v, else an
// error wrapping errStaleGeneration.
func (s *Store) stillPending(ctx context.Context, v string) error {
	raw, err := s.rdb.Get(ctx, s.key(regKey, "pending")).Result()
	if err != nil && err != redis.Nil {
		return s.fail("read the register load's marker", err)
	}
	var p PendingRegister
	if err == nil && json.Unmarshal([]byte(raw), &p) == nil && p.Version == v {
		return nil
	}
	return s.staleLoad(v)
}

// staleLoad is the error of a load whose generation is no longer the
// pending one.
func (s *Store) staleLoad(v string) error {
	return fmt.Errorf("redisstore: register load %s was abandoned while it ran (its lease on %s lapsed and the load was dropped, or a newer load took over): %w; run the load again",
		v, s.key(regKey, "pending"), errStaleGeneration)
}

func (s *Store) clearRegisterPending(ctx context.Context, v string) error {
	return s.fail("clear the register load's marker",
		clearPendingScript.Run(ctx, s.rdb, []string{s.key(regKey, "pending"), s.key(regKey, "pending", "lease")}, v).Err())
}

// CompleteRegister finishes a register load whose loader died between its
// two commit steps (see above) and reports what it did: "" (nothing
// pending, or its loader still runs), "switched" or "dropped". It needs a
// notice store that is a RegisterIndexer; with any other it does nothing.
func (s *Store) CompleteRegister(ctx context.Context) (string, error) {
	ri, ok := s.source.(RegisterIndexer)
	if !ok {
		return "", nil
	}
	vals, err := s.rdb.MGet(ctx, s.key(regKey, "pending"), s.key(regKey, "pending", "lease")).Result()
	if err != nil {
		return "", s.fail("read the register load's marker", err)
	}
	if vals[0] == nil || vals[1] != nil {
		return "", nil // nothing pending, or its loader is alive
	}
	raw, _ := vals[0].(string)
	var p PendingRegister
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.Version == "" {
		return "", fmt.Errorf("redisstore: the register load marker %s is unreadable (%q); delete it after checking that no register load runs", s.key(regKey, "pending"), raw)
	}
	live, err := ri.RegisterIndices(ctx)
	if err != nil {
		return "", err
	}
	load := &RegisterLoad{s: s, v: p.Version, marked: true}
	if slices.Contains(live, p.Index) {
		// The company view reads the new register: switch Redis to it.
		if err := load.switchTo(ctx); err != nil {
			return "", err
		}
		return "switched", nil
	}
	// The swap never happened: the old register stands on both sides.
	// The marker goes first, in one step with the checks that the loader
	// has not switched or renewed its lease meanwhile, so a loader that
	// resumes later finds its generation no longer pending and its switch
	// is refused (switchRegisterScript) rather than naming deleted keys.
	taken, err := abandonPendingScript.Run(ctx, s.rdb, []string{s.key(regKey, "pending"), s.key(regKey, "pending", "lease"), s.key(regKey, "v")}, p.Version).Int()
	if err != nil {
		return "", s.fail("drop the register load's marker", err)
	}
	if taken == 0 {
		return "", nil // the loader came back meanwhile
	}
	if err := load.Rollback(); err != nil {
		return "", err
	}
	return "dropped", nil
}

// errStoppedBetween is a test's stop between a register load's two steps.
var errStoppedBetween = errors.New("redisstore: register load stopped between its two commit steps by the test (stopBefore)")
