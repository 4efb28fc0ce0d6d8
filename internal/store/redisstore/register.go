package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// Register keys, one generation per load (<v> from reg:next):
//
//	reg:v               the generation readers use
//	reg:<v>:name        hash ACN -> current company name
//	reg:<v>:acnabn      hash ACN -> its ABNs (comma-joined, file order)
//	reg:<v>:abn         hash ABN -> its ACNs (comma-joined, file order)
//
// An ABN is normally held by one ACN's rows, but the register may give one
// ABN to rows of several ACNs (and one ACN several ABNs): every one is
// kept, so the screen and watch match keys use all of them, as the
// embedded store does.
//
// A load writes a new generation and Commit switches reg:v in one step; the
// old generation expires after oldRegisterTTL, so a screen that read the
// old version finishes on consistent data. Until its Commit a generation's
// keys expire loadingRegisterTTL after its last Add, so a load that was
// killed leaves nothing behind for long; Commit makes them persistent.

const (
	oldRegisterTTL     = 600   // seconds
	loadingRegisterTTL = 86400 // seconds
)

// RegisterLoad is a register replacement in progress. It implements
// store.RegisterLoad.
type RegisterLoad struct {
	s    *Store
	v    string
	done bool
	// acns marks what this load has written under each nine-digit number:
	// acnNamed (the ACN's current name: a later row marked current does not
	// replace it, the first one wins, as in the embedded store and the
	// company view), acnPaired (the ACN's field of acnabn exists) and
	// abnFormed (the field of abn exists for the ABN formed from this number
	// and the two leading digits kept from bit abnShift up; an ABN is
	// normally two check digits and the ACN). Marks are only ever added.
	acns map[uint32]uint16
	// oddACNs are acns' marks for ACNs other than nine digits (ingest
	// accepts none; Add takes any string).
	oddACNs map[string]uint16
	// oddABNs are the ABNs whose field of abn this load has written and
	// that acns cannot mark: not eleven digits, or a second ABN formed
	// from the same number.
	oddABNs map[string]struct{}
}

// The marks of RegisterLoad.acns.
const (
	acnNamed uint16 = 1 << iota
	acnPaired
	abnFormed
	abnShift = iota
)

// acnNumber returns a nine-digit ACN as a number (a compact map key).
func acnNumber(acn string) (uint32, bool) {
	if len(acn) != 9 {
		return 0, false
	}
	n, err := strconv.ParseUint(acn, 10, 32)
	return uint32(n), err == nil
}

// writeABN reports whether abn's field of abn is not yet written by this
// load, and marks it written.
func (l *RegisterLoad) writeABN(abn string) bool {
	if len(abn) == 11 && abn[0] >= '0' && abn[0] <= '9' && abn[1] >= '0' && abn[1] <= '9' {
		if n, ok := acnNumber(abn[2:]); ok {
			lead := uint16(abn[0]-'0')*10 + uint16(abn[1]-'0')
			m := l.acns[n]
			if m&abnFormed == 0 {
				l.acns[n] = m | abnFormed | lead<<abnShift
				return true
			}
			if m>>abnShift == lead {
				return false
			}
		}
	}
	if _, ok := l.oddABNs[abn]; ok {
		return false
	}
	l.oddABNs[abn] = struct{}{}
	return true
}

var _ store.RegisterLoad = (*RegisterLoad)(nil)

// BeginRegister starts writing a new register generation.
func (s *Store) BeginRegister(ctx context.Context) (*RegisterLoad, error) {
	v, err := s.rdb.Incr(ctx, s.key("reg", "next")).Result()
	if err != nil {
		return nil, s.fail("begin register load", err)
	}
	return &RegisterLoad{s: s, v: itoa(v), acns: map[uint32]uint16{}, oddACNs: map[string]uint16{}, oddABNs: map[string]struct{}{}}, nil
}

// addPairsScript adds values to the comma-joined lists of a hash, each
// once. KEYS[1]: the hash. ARGV: field, value, field, value, ...
var addPairsScript = redis.NewScript(`
for i = 1, #ARGV, 2 do
  local f, v = ARGV[i], ARGV[i+1]
  if redis.call('HSETNX', KEYS[1], f, v) == 0 then
    local cur = redis.call('HGET', KEYS[1], f)
    if cur ~= v and not string.find(',' .. cur .. ',', ',' .. v .. ',', 1, true) then
      redis.call('HSET', KEYS[1], f, cur .. ',' .. v)
    end
  end
end
return 1
`)

// Add writes rows into the new generation: the name of each ACN (its
// first row marked current, else its first row, as the embedded store and
// the company view name it), and every ACN <-> ABN pair.
//
// The names go in as one multi-field HSET per chunk for the first row
// marked current of each ACN (l.acns keeps later ones out) and an HSETNX
// for each other row that can still matter (no current row of its ACN
// yet, the first of its ACN in the batch): the same hash as writing row by
// row in file order, in far fewer commands.
//
// A pair whose field (the ACN's in acnabn, the ABN's in abn) this load has
// not written yet starts the field's list with a multi-field HSET too: only
// this load writes its generation, so l.acns and l.oddABNs know which fields
// exist. A field is marked before its command is sent, so one that may
// exist is never overwritten. The rest (an ACN's second ABN, an ABN of
// several ACNs, a pair repeated in a later batch) go through
// addPairsScript, which appends a value its list lacks. The script alone
// gives the same hashes with about a third more of Redis's CPU (27 against
// 20 CPU-seconds for 4,000,000 rows, alternated; docs/benchmarks.md,
// 2026-11-24).
func (l *RegisterLoad) Add(ctx context.Context, rows []notice.RegisterRow) error {
	s := l.s
	name, acnabn, abn := s.key("reg", l.v, "name"), s.key("reg", l.v, "acnabn"), s.key("reg", l.v, "abn")
	var current, others []any
	var firstACN, firstABN, againACN, againABN []any
	hasCurrent := make(map[string]bool, len(rows))
	for _, r := range rows {
		if r.ACN != "" && r.IsCurrent() {
			hasCurrent[r.ACN] = true
		}
	}
	seenOther := make(map[string]bool)
	type pair struct{ acn, abn string }
	seenPair := make(map[pair]bool, len(rows))
	for _, r := range rows {
		if r.ACN == "" {
			continue
		}
		acn, numeric := acnNumber(r.ACN)
		var mark uint16
		if numeric {
			mark = l.acns[acn]
		} else {
			mark = l.oddACNs[r.ACN]
		}
		switch {
		case mark&acnNamed != 0:
			// Its first current row is written already.
		case r.IsCurrent():
			mark |= acnNamed
			current = append(current, r.ACN, r.CompanyName)
		case hasCurrent[r.ACN] || seenOther[r.ACN]:
			// A current row of the batch overwrites it, or an earlier
			// row of the batch set it first.
		default:
			seenOther[r.ACN] = true
			others = append(others, r.ACN, r.CompanyName)
		}
		if p := (pair{r.ACN, r.ABN}); r.ABN != "" && !seenPair[p] {
			seenPair[p] = true
			if mark&acnPaired == 0 {
				mark |= acnPaired
				firstACN = append(firstACN, r.ACN, r.ABN)
			} else {
				againACN = append(againACN, r.ACN, r.ABN)
			}
			if l.writeABN(r.ABN) {
				firstABN = append(firstABN, r.ABN, r.ACN)
			} else {
				againABN = append(againABN, r.ABN, r.ACN)
			}
		}
		// Or'ed in: writeABN may have marked this number meanwhile.
		if numeric {
			if cur := l.acns[acn]; cur|mark != cur {
				l.acns[acn] = cur | mark
			}
		} else if cur := l.oddACNs[r.ACN]; cur|mark != cur {
			l.oddACNs[r.ACN] = cur | mark
		}
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for lo := 0; lo < len(current); lo += 2 * batch {
			p.HSet(ctx, name, current[lo:min(lo+2*batch, len(current))]...)
		}
		for i := 0; i < len(others); i += 2 {
			p.HSetNX(ctx, name, others[i].(string), others[i+1])
		}
		for _, w := range []struct {
			key    string
			fields []any
		}{{acnabn, firstACN}, {abn, firstABN}} {
			for lo := 0; lo < len(w.fields); lo += 2 * batch {
				p.HSet(ctx, w.key, w.fields[lo:min(lo+2*batch, len(w.fields))]...)
			}
		}
		return nil
	})
	if err != nil {
		return s.fail("write register rows", err)
	}
	for _, w := range []struct {
		key, what string
		fields    []any
	}{{acnabn, "ABNs", againACN}, {abn, "ACNs", againABN}} {
		for lo := 0; lo < len(w.fields); lo += 2 * batch {
			if err := addPairsScript.Run(ctx, s.rdb, []string{w.key}, w.fields[lo:min(lo+2*batch, len(w.fields))]...).Err(); err != nil {
				return s.fail("write register "+w.what, err)
			}
		}
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range []string{name, acnabn, abn} {
			p.Expire(ctx, k, loadingRegisterTTL*time.Second)
		}
		return nil
	})
	return s.fail("write register rows", err)
}

// primaryACN is the ACN an ABN resolves to among acns (its register ACNs),
// as the embedded store picks it: the ACN the ABN is formed from (two
// digits followed by the ACN) when it is one of them, else the lowest. ""
// when acns is empty.
func primaryACN(abn string, acns []string) string {
	if len(acns) == 1 {
		return acns[0]
	}
	best := ""
	for _, a := range acns {
		if len(abn) == 11 && a == abn[2:] {
			return a
		}
		if best == "" || a < best {
			best = a
		}
	}
	return best
}

// switchRegisterScript makes generation ARGV[2] the one readers use (its
// keys persistent) and lets the old one expire. KEYS: reg:v. ARGV: ns,
// generation, the old one's TTL.
var switchRegisterScript = redis.NewScript(`
local old = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], ARGV[2])
for _, k in ipairs({'name', 'acnabn', 'abn'}) do redis.call('PERSIST', ARGV[1] .. 'reg:' .. ARGV[2] .. ':' .. k) end
if old and old ~= ARGV[2] then
  for _, k in ipairs({'name', 'acnabn', 'abn'}) do redis.call('EXPIRE', ARGV[1] .. 'reg:' .. old .. ':' .. k, ARGV[3]) end
end
return 1
`)

// Commit switches readers to the new generation in one step, then brings
// the watches' match keys up to date with it (RefreshWatchKeys).
func (l *RegisterLoad) Commit(ctx context.Context) error {
	if l.done {
		return fmt.Errorf("redisstore: register load %s already finished", l.v)
	}
	l.done = true
	return l.switchTo(ctx)
}

// switchTo switches readers to the load's generation (again, harmlessly,
// when they read it already), brings the watches' match keys up to date,
// and clears the load's pending marker (regpending.go).
func (l *RegisterLoad) switchTo(ctx context.Context) error {
	s := l.s
	if err := switchRegisterScript.Run(ctx, s.rdb, []string{s.key("reg", "v")}, s.ns, l.v, oldRegisterTTL).Err(); err != nil {
		return s.fail("switch register", err)
	}
	if _, err := s.RefreshWatchKeys(ctx); err != nil {
		return err
	}
	return s.clearRegisterPending(ctx, l.v)
}

// Rollback drops the new generation; the current register stays.
func (l *RegisterLoad) Rollback() error {
	if l.done {
		return nil
	}
	l.done = true
	s := l.s
	return s.fail("drop register load", s.rdb.Unlink(context.Background(),
		s.key("reg", l.v, "name"), s.key("reg", l.v, "acnabn"), s.key("reg", l.v, "abn")).Err())
}

// register is one generation of the register, for lookups.
type register struct {
	s *Store
	v string // "" when no register was ever loaded
}

func (s *Store) currentRegister(ctx context.Context) (register, error) {
	v, err := s.rdb.Get(ctx, s.key("reg", "v")).Result()
	if err == redis.Nil {
		return register{s: s}, nil
	}
	return register{s: s, v: v}, s.fail("read register version", err)
}

// lookup returns the values of fields in hash part ("name", "acnabn",
// "abn"), "" for a missing one, in batches of one pipeline.
func (r register) lookup(ctx context.Context, part string, fields []string) ([]string, error) {
	if r.v == "" {
		return make([]string, len(fields)), nil
	}
	return r.s.hmget(ctx, r.s.key("reg", r.v, part), fields)
}

// batch is the most fields or members of one command; roundTrip the most
// of them sent in one pipeline (one round trip), so a 1,000,000-identifier
// watch takes ten round trips and no single reply outlasts the read
// timeout.
const (
	batch     = 10000
	roundTrip = 100000
)

// hmget is HMGET over any number of fields: batch fields a command,
// roundTrip fields a pipeline.
func (s *Store) hmget(ctx context.Context, key string, fields []string) ([]string, error) {
	out := make([]string, 0, len(fields))
	for lo := 0; lo < len(fields); lo += roundTrip {
		part := fields[lo:min(lo+roundTrip, len(fields))]
		var cmds []*redis.SliceCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := 0; i < len(part); i += batch {
				cmds = append(cmds, p.HMGet(ctx, key, part[i:min(i+batch, len(part))]...))
			}
			return nil
		})
		if err != nil {
			return nil, s.fail("read stored records", err)
		}
		for _, c := range cmds {
			for _, v := range c.Val() {
				out = append(out, str(v))
			}
		}
	}
	return out, nil
}

// lookupReq is one HMGET of hmgetMany: fields of key ("" key: all fields
// missing, for a register never loaded).
type lookupReq struct {
	key    string
	fields []string
}

// hmgetMany runs several HMGETs over any number of fields in one pipeline
// (batch fields a command) and returns each request's values, "" for a
// missing field.
func (s *Store) hmgetMany(ctx context.Context, reqs ...lookupReq) ([][]string, error) {
	cmds := make([][]*redis.SliceCmd, len(reqs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for r, req := range reqs {
			if req.key == "" {
				continue
			}
			for i := 0; i < len(req.fields); i += batch {
				cmds[r] = append(cmds[r], p.HMGet(ctx, req.key, req.fields[i:min(i+batch, len(req.fields))]...))
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.fail("look up identifiers", err)
	}
	out := make([][]string, len(reqs))
	for r, req := range reqs {
		out[r] = make([]string, 0, len(req.fields))
		if req.key == "" {
			out[r] = out[r][:len(req.fields)]
			continue
		}
		for _, c := range cmds[r] {
			for _, v := range c.Val() {
				out[r] = append(out[r], str(v))
			}
		}
	}
	return out, nil
}

// regKey returns the key of a part of the register generation, "" when no
// register was ever loaded.
func (r register) regKey(part string) string {
	if r.v == "" {
		return ""
	}
	return r.s.key("reg", r.v, part)
}
