package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/lease"
)

// One register generation everywhere (docs/redis.md, "Register and notice
// sets"): before Elasticsearch moves its register alias, a load writes the
// marker reg:pending (PendingRegister) and its lease reg:pending:lease;
// the Redis switch deletes both. CompleteRegister finishes what a dead
// loader left: the switch when the alias names the marker's index, else a
// drop of the unused Redis generation.

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

// pendingKeys returns reg:pending, reg:pending:lease and reg:v.
func (s *Store) pendingKeys() []string {
	return []string{s.key(regKey, "pending"), s.key(regKey, "pending", "lease"), s.key(regKey, "v")}
}

// markPending writes the load's marker (its generation and index) and
// its lease before the Elasticsearch step, and returns the renewal's stop.
func (l *RegisterLoad) markPending(ctx context.Context, index string) (stop func(), err error) {
	b, err := json.Marshal(PendingRegister{Version: l.v, Index: index})
	if err != nil {
		return nil, err
	}
	k := l.s.pendingKeys()
	if _, err := l.s.rdb.TxPipelined(ctx, func(pp redis.Pipeliner) error {
		pp.Set(ctx, k[0], b, 0)
		pp.Set(ctx, k[1], l.v, pendingLease)
		return nil
	}); err != nil {
		return nil, l.s.fail("mark the register load pending", err)
	}
	l.marked = true
	return lease.Keep(pendingLease/3, func(ctx context.Context) { l.s.rdb.PExpire(ctx, k[1], pendingLease) }), nil
}

// pendingLua's pending(k, v) is whether the marker k names generation v.
const pendingLua = `
local function pending(k, v)
  local ok, m = pcall(cjson.decode, redis.call('GET', k) or '')
  return ok and type(m) == 'table' and m.v == v
end
`

// pendingScript answers whether the marker names generation ARGV[1] (1,
// else 0) and, unless ARGV[2] is "check", deletes it and its lease; for
// "abandoned" (a dead loader's load) not while the lease lives or readers
// use the generation (then 0). KEYS: reg:pending, reg:pending:lease, reg:v.
var pendingScript = redis.NewScript(pendingLua + `
if not pending(KEYS[1], ARGV[1]) then return 0 end
if ARGV[2] == 'check' then return 1 end
if ARGV[2] == 'abandoned' and (redis.call('EXISTS', KEYS[2]) == 1 or redis.call('GET', KEYS[3]) == ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1`)

// pending runs pendingScript (how: check, drop or abandoned) for the
// load's generation.
func (l *RegisterLoad) pending(ctx context.Context, how string) (bool, error) {
	n, err := pendingScript.Run(ctx, l.s.rdb, l.s.pendingKeys(), l.v, how).Int()
	return n == 1, l.s.fail("update the register load's marker", err)
}

// staleLoad is the error of a load whose generation is no longer the
// pending one.
func (s *Store) staleLoad(v string) error {
	return fmt.Errorf("redisstore: register load %s was abandoned while it ran (its lease on %s lapsed and the load was dropped, or a newer load took over): the register load's generation is no longer the pending one; run the load again",
		v, s.key(regKey, "pending"))
}

// CompleteRegister finishes a register load whose loader died between its
// two commit steps (see above) and reports what it did: "" (nothing
// pending, or its loader still runs), "switched" or "dropped". First it
// settles the expiry of the generations a switch recorded (settleRegister:
// a loader that died just after its switch left its generation's keys
// expiring 24 h after its last batch). The rest needs a notice store that
// is a RegisterIndexer; with any other it does nothing more.
func (s *Store) CompleteRegister(ctx context.Context) (string, error) {
	if err := s.settleRegister(ctx); err != nil {
		return "", err
	}
	ri, ok := s.source.(RegisterIndexer)
	if !ok {
		return "", nil
	}
	k := s.pendingKeys()
	vals, err := s.rdb.MGet(ctx, k[0], k[1]).Result()
	if err != nil {
		return "", s.fail("read the register load's marker", err)
	}
	if vals[0] == nil || vals[1] != nil {
		return "", nil // nothing pending, or its loader is alive
	}
	raw, _ := vals[0].(string)
	var p PendingRegister
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.Version == "" {
		return "", fmt.Errorf("redisstore: the register load marker %s is unreadable (%q); delete it after checking that no register load runs", k[0], raw)
	}
	live, err := ri.RegisterIndices(ctx)
	if err != nil {
		return "", err
	}
	load := &RegisterLoad{s: s, v: p.Version, marked: true}
	if slices.Contains(live, p.Index) {
		// The company view reads the new register: switch Redis to it.
		if err := load.Commit(ctx); err != nil {
			return "", err
		}
		return "switched", nil
	}
	// The swap never happened. The marker goes first, checking that the
	// loader has not switched or renewed its lease meanwhile, so a loader
	// that resumes finds its switch refused (switchRegisterScript) rather
	// than naming deleted keys.
	if taken, err := load.pending(ctx, "abandoned"); err != nil || !taken {
		return "", err // not taken: the loader came back meanwhile
	}
	if err := load.Rollback(); err != nil {
		return "", err
	}
	return "dropped", nil
}
