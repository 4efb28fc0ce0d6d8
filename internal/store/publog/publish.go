package publog

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
)

// Kind says whether a published notice is new (its first publish) or an
// amendment of one published before, which keeps its notice_seq.
type Kind string

// The kinds of a log entry.
const (
	KindNew     Kind = "n"
	KindAmended Kind = "a"
)

// publishChunk is the most notices one publish script takes: Redis runs a
// script alone, so a batch is published in chunks to keep every other
// client's wait short.
const publishChunk = 500

// publishScript publishes one chunk while this writer holds the lease
// under its epoch. KEYS writer, epoch, published, log, trimmed, dirty,
// version, match cursor; ARGV value, epoch, through (the seq published up
// to), final (0, or the batch's last chunk: 1 clears dirty, 2 keeps it),
// retention (ms), then (kind, summary) pairs, one log entry {k, s} each.
// Published rises to through; the last chunk raises the data version and
// trims the log to the retention, never past the match cursor (an entry is
// kept until arrival matching has committed it), keeping in trimmed the id
// of the last entry trimmed away. It returns 1, or 0 when the lease is not
// this writer's (nothing written).
var publishScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] or redis.call('GET', KEYS[2]) ~= ARGV[2] then return 0 end
for i = 6, #ARGV, 2 do
  redis.call('XADD', KEYS[4], '*', 'k', ARGV[i], 's', ARGV[i + 1])
end
if tonumber(ARGV[3]) > tonumber(redis.call('GET', KEYS[3]) or '0') then redis.call('SET', KEYS[3], ARGV[3]) end
if ARGV[4] ~= '0' then
  if ARGV[4] == '1' then redis.call('DEL', KEYS[6]) end
  redis.call('INCR', KEYS[7])
  local t = redis.call('TIME')
  local min = (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - tonumber(ARGV[5])) .. '-0'
  local at = redis.call('GET', KEYS[8]) or '0-0'
  local am, an = string.match(at, '^(%d+)-?(%d*)$')
  local mm = string.match(min, '^(%d+)')
  if tonumber(am) < tonumber(mm) then min = am .. '-' .. (tonumber(an ~= '' and an or '0') + 1) end
  local gone = redis.call('XREVRANGE', KEYS[4], '(' .. min, '-', 'COUNT', 1)
  if #gone > 0 then
    redis.call('XTRIM', KEYS[4], 'MINID', min)
    redis.call('SET', KEYS[5], gone[1][1])
  end
end
return 1`)

// Publish publishes notices as stored (seq set), in order, with their
// kinds (parallel to ns), and raises Published to through (at least the
// highest seq this lease allocated). Its chunks each check the lease; the
// last one ends what the lease left unpublished. ErrStale: the lease
// passed to another writer, and what the chunks before published stays
// published (a later publish of the same notices is harmless: every
// follower of the log applies an entry idempotently).
func (le *Lease) Publish(ctx context.Context, ns []notice.Notice, kinds []Kind, through int64) error {
	return le.publish(ctx, ns, kinds, through, true)
}

// publish is Publish that clears dirty only when clear.
func (le *Lease) publish(ctx context.Context, ns []notice.Notice, kinds []Kind, through int64, clear bool) error {
	if len(kinds) != len(ns) {
		return fmt.Errorf("publog: publish %d notices with %d kinds", len(ns), len(kinds))
	}
	k := le.log.keys
	keys := []string{k.Writer, k.Epoch, k.Published, k.Log, k.Trimmed, k.Dirty, k.Version, k.MatchAt}
	for lo := 0; lo == 0 || lo < len(ns); lo += publishChunk {
		hi := min(lo+publishChunk, len(ns))
		final := "0"
		if hi == len(ns) {
			final = map[bool]string{true: "1", false: "2"}[clear]
		}
		upTo := int64(0)
		args := make([]any, 0, 5+2*(hi-lo))
		args = append(args, le.value, le.Epoch, nil, final, le.log.opt.Retention.Milliseconds())
		for i := lo; i < hi; i++ {
			n := &ns[i]
			if n.Seq <= 0 {
				return fmt.Errorf("publog: publish notice %s: it has no notice_seq", n.ID)
			}
			args = append(args, string(kinds[i]), EncodeSummary(n))
			if kinds[i] == KindNew {
				upTo = max(upTo, n.Seq)
			}
		}
		if final != "0" {
			upTo = max(upTo, through)
		}
		args[2] = upTo
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		ok, err := publishScript.Run(cctx, le.log.rdb, keys, args...).Int64()
		cancel()
		if err != nil {
			return Unavailable(err)
		}
		if ok == 0 {
			return ErrStale
		}
	}
	return nil
}

// Entry is one entry of the publish log.
type Entry struct {
	// ID is the entry's stream id.
	ID string
	// Kind is New or Amended.
	Kind Kind
	// Summary is the notice's summary (EncodeSummary).
	Summary string
}

// Read returns up to count entries after the entry id after ("0" for the
// first), in log order, and whether entries after it may have been trimmed
// away (the reader is behind the log's retention and must reload).
func (l *Log) Read(ctx context.Context, after string, count int64) ([]Entry, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	var rng *redis.XMessageSliceCmd
	var trimmed *redis.StringCmd
	_, err := l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		trimmed = p.Get(ctx, l.keys.Trimmed)
		rng = p.XRangeN(ctx, l.keys.Log, "("+after, "+", count)
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, false, Unavailable(err)
	}
	if t, err := trimmed.Result(); err == nil && IDLess(after, t) {
		return nil, true, nil
	}
	msgs, err := rng.Result()
	if err != nil {
		return nil, false, Unavailable(err)
	}
	return EntriesOf(msgs), false, nil
}

// EntriesOf decodes messages of the publish log (an XRANGE of Keys.Log).
func EntriesOf(msgs []redis.XMessage) []Entry {
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		kind, _ := m.Values["k"].(string)
		sum, _ := m.Values["s"].(string)
		out = append(out, Entry{ID: m.ID, Kind: Kind(kind), Summary: sum})
	}
	return out
}

// Head returns the id of the log's last entry ("0-0" when empty): a reader
// that loads the notices' state now and then reads after Head misses
// nothing published since.
func (l *Log) Head(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	msgs, err := l.rdb.XRevRangeN(ctx, l.keys.Log, "+", "-", 1).Result()
	if err != nil {
		return "", Unavailable(err)
	}
	if len(msgs) == 0 {
		return "0-0", nil
	}
	return msgs[0].ID, nil
}

// IDLess reports whether the stream entry id a is below b ("ms-n" ids,
// compared by both parts; a bare "ms" is "ms-0").
func IDLess(a, b string) bool {
	am, an := splitID(a)
	bm, bn := splitID(b)
	return am < bm || (am == bm && an < bn)
}

func splitID(id string) (ms, n uint64) {
	l, r, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(l, 10, 64)
	n, _ = strconv.ParseUint(r, 10, 64)
	return ms, n
}

// PublishedSince returns the ids of the notices published since about t
// (entries of the log from t's millisecond on). When the log was trimmed
// past t it cannot tell, and says so (an error).
func (l *Log) PublishedSince(ctx context.Context, t time.Time) (map[string]bool, error) {
	out := map[string]bool{}
	after := strconv.FormatInt(t.UnixMilli()-1, 10) + "-" + strconv.FormatUint(^uint64(0), 10)
	for {
		es, gone, err := l.Read(ctx, after, 10000)
		if err != nil {
			return nil, err
		}
		if gone {
			return nil, fmt.Errorf("publog: the publish log was trimmed past %s (NOTICES_PUBLISH_LOG_RETENTION): what a stalled writer wrote before then cannot be told apart; write the batch again", t.UTC().Format(time.RFC3339))
		}
		for _, e := range es {
			id, _, _ := strings.Cut(e.Summary, sep)
			out[id] = true
			after = e.ID
		}
		if len(es) < 10000 {
			return out, nil
		}
	}
}
