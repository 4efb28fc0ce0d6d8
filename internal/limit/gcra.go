package limit

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
)

// The request rate in Redis: a GCRA bucket (generic cell rate algorithm)
// per key, one string holding the bucket's theoretical arrival time in
// seconds since 2017-01-01 (Redis's clock), expiring when the bucket is
// full again. The algorithm and the stored value are those of
// github.com/go-redis/redis_rate v10, which kept these buckets before, so
// replicas of both versions share one bucket during an upgrade.

// RateKey is the Redis key of account's rate bucket (the key kind:
// "read" or "acct") in namespace ns:
// "{<ns>:a:<account>}:limit:rate:<bucket>", under the account's hash tag
// with its other keys (package keyspace).
func RateKey(ns, account, bucket string) string {
	return keyspace.Account(ns, account) + "limit:rate:" + bucket
}

// GCRALua defines the Lua function gcra(key, burst, rate, period), which
// takes one token of the bucket at key (a KEYS entry of the calling
// script) and returns {allowed (1 or 0), retry after in seconds (a
// string; -1 when allowed)}. Scripts that take a token among other work
// (the Redis store's key check) start with it, so every script that
// takes a token runs the same code.
const GCRALua = `
local function gcra(key, burst, rate, period)
  local emission_interval = period / rate
  local burst_offset = emission_interval * burst
  local t = redis.call('TIME')
  local now = (t[1] - 1483228800) + (t[2] / 1000000)
  local tat = redis.call('GET', key)
  if not tat then tat = now else tat = tonumber(tat) end
  tat = math.max(tat, now)
  local new_tat = tat + emission_interval
  local diff = now - (new_tat - burst_offset)
  if diff / emission_interval < 0 then
    return {0, tostring(-diff)}
  end
  local reset_after = new_tat - now
  if reset_after > 0 then
    redis.call('SET', key, new_tat, 'EX', math.ceil(reset_after))
  end
  return {1, '-1'}
end
`

// allowScript takes one token. KEYS: the bucket. ARGV: Rate.GCRAArgs.
var allowScript = redis.NewScript(GCRALua + `
return gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
`)

// GCRAArgs are the ARGV of a script calling gcra at rate r: burst, rate,
// period (1 second).
func (r Rate) GCRAArgs() []any { return []any{r.burst(), r.PerSecond, 1} }

// ParseGCRA turns what gcra returned into a Decision.
func ParseGCRA(v []any) (Decision, error) {
	if len(v) != 2 {
		return Decision{}, fmt.Errorf("rate script answered %v", v)
	}
	if n, _ := v[0].(int64); n == 1 {
		return Decision{Allowed: true}, nil
	}
	s, _ := v[1].(string)
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return Decision{}, fmt.Errorf("rate script's retry after %q: %w", s, err)
	}
	return Decision{RetryAfter: time.Duration(math.Ceil(sec * float64(time.Second)))}, nil
}
