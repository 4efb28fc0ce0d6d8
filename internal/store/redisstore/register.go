package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// The register's identifier sets, one generation per load (<v> from
// reg:next); their keys and expiry, and why: docs/redis.md, key table
// and "Register and notice sets".

const (
	oldRegisterTTL     = 600   // seconds
	loadingRegisterTTL = 86400 // seconds
)

var _ store.RegisterLoad = (*RegisterLoad)(nil)

// RegisterLoad is a register replacement in progress.
type RegisterLoad struct {
	s    *Store
	v    string
	done bool
	// marked: the load's generation was written as the pending marker
	// (regpending.go); its switch then checks that it still is.
	marked bool
	// acns marks what this load has read and written of each ACN of the
	// ids strings (by its slot), oddACNs of the others.
	acns    map[uint32]uint8
	oddACNs map[string]uint8
	// abns are the ABNs whose field of abn this load has written.
	abns map[string]struct{}
}

// The marks of RegisterLoad.acns. The low two bits are the ACN's ids code
// (named<<1 | formed) as read so far, the next two the code written.
const (
	acnFormedBit uint8 = 1 << iota // its formed ABN was read
	acnNamedBit                    // the name decided so far is not empty
	_                              // the code written (acnWritten set) ...
	_
	acnWritten // its ids entry (or odd field) was written
	acnSeen    // a row of the ACN was read (its first row names it unless a current row comes)
	acnCurrent // its first current row was read: its name is decided
	acnPaired  // its field of acnabn exists
)

// slotsPerPart is how many ACN slots one ids string holds (2 bits each:
// 16,250 bytes, which with the string's header still fits the allocator's
// 16 KiB class; 65,536 would take its 20 KiB one).
const slotsPerPart = 65000

// regSlot returns the slot of an ACN in the ids strings: its first eight
// digits as a number, when it is nine digits with a valid check digit.
func regSlot(acn string) (uint32, bool) {
	if !ident.ValidACN(acn) {
		return 0, false
	}
	n, _ := nineDigits(acn)
	return n / 10, true
}

// slotNumber returns the ACN of a slot as a number: its first eight
// digits and the check digit (weights 8..1, (10 - sum mod 10) mod 10).
func slotNumber(slot uint32) uint32 {
	sum := uint32(0)
	for w, n := uint32(1), slot; w <= 8; w, n = w+1, n/10 {
		sum += n % 10 * w
	}
	return slot*10 + (10-sum%10)%10
}

// formedPrefix returns the two digits the ABN formed of a nine-digit ACN
// starts with: the smallest prefix 10..99 that makes prefix+ACN a valid
// ABN (as ident.ABNFromACN, without formatting the candidates).
func formedPrefix(acn uint32) uint8 {
	rest := uint32(0)
	for w, n := uint32(19), acn; w >= 3; w, n = w-2, n/10 {
		rest += n % 10 * w
	}
	return uint8(10 + (89-rest%89)%89)
}

func formedABN(acn string) string {
	n, _ := nineDigits(acn)
	p := formedPrefix(n)
	return string([]byte{'0' + p/10, '0' + p%10}) + acn
}

func formedOf(abn string) (string, bool) {
	if len(abn) != 11 || !ident.ValidACN(abn[2:]) || formedABN(abn[2:]) != abn {
		return "", false
	}
	return abn[2:], true
}

var regParts = []string{"idparts", "acnabn", "abn", "odd"}

// regKeys returns the keys of register generation v: its parts under the
// namespace's tag (and, for a generation an older version loaded, an
// upgrade path only, its names hash reg:<v>:name), then its ids strings
// (read from reg:<v>:idparts), spread over slot groups (idsKey).
func (s *Store) regKeys(ctx context.Context, v string) (parts, ids []string, err error) {
	bs, err := s.rdb.SMembers(ctx, s.key(regKey, v, "idparts")).Result()
	if err != nil {
		return nil, nil, s.fail("read the register's parts", err)
	}
	for _, p := range append(regParts, "name") {
		parts = append(parts, s.key(regKey, v, p))
	}
	for _, b := range bs {
		n, err := strconv.ParseUint(b, 10, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("redisstore: %s holds %q, not the number of an ids string", s.key(regKey, v, "idparts"), b)
		}
		ids = append(ids, s.idsKey(v, uint32(n)))
	}
	return parts, ids, nil
}

// bySlot splits keys by Redis Cluster hash slot: on a cluster a command
// of several keys names keys of one slot.
func bySlot(keys []string) [][]string {
	at := map[int]int{}
	var out [][]string
	for _, k := range keys {
		i, ok := at[keyspace.Slot(k)]
		if !ok {
			i = len(out)
			at[keyspace.Slot(k)] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], k)
	}
	return out
}

// BeginRegister starts writing a new register generation.
func (s *Store) BeginRegister(ctx context.Context) (*RegisterLoad, error) {
	v, err := s.rdb.Incr(ctx, s.key(regKey, "next")).Result()
	if err != nil {
		return nil, s.fail("begin register load", err)
	}
	return &RegisterLoad{s: s, v: itoa(v), acns: map[uint32]uint8{}, oddACNs: map[string]uint8{},
		abns: map[string]struct{}{}}, nil
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

// Add writes rows into the new generation: whether each ACN is named (its
// first row marked current, else its first row, has a name, as the
// embedded store names it), whether it holds its formed ABN, and every
// other ACN <-> ABN pair (each written once: docs/redis.md, "Write path").
func (l *RegisterLoad) Add(ctx context.Context, rows []notice.RegisterRow) error {
	s := l.s
	acnabn, abn, odd := s.key(regKey, l.v, "acnabn"), s.key(regKey, l.v, "abn"), s.key(regKey, l.v, "odd")
	var firstACN, firstABN, againACN, againABN, oddFields []any
	bitfields := map[uint32][]any{} // b -> SET ops
	type pair struct{ acn, abn string }
	seenPair := make(map[pair]bool, len(rows))
	for _, r := range rows {
		if r.ACN == "" {
			continue
		}
		slot, numeric := regSlot(r.ACN)
		m := l.acns[slot]
		if !numeric {
			m = l.oddACNs[r.ACN]
		}
		if cur := r.IsCurrent(); m&acnCurrent == 0 && (cur || m&acnSeen == 0) {
			m = (m | acnSeen) &^ acnNamedBit
			if cur {
				m |= acnCurrent
			}
			if r.CompanyName != "" {
				m |= acnNamedBit
			}
		}
		if p := (pair{r.ACN, r.ABN}); r.ABN != "" && !seenPair[p] {
			seenPair[p] = true
			if numeric && r.ABN == formedABN(r.ACN) {
				m |= acnFormedBit
			} else {
				if m&acnPaired == 0 {
					m |= acnPaired
					firstACN = append(firstACN, r.ACN, r.ABN)
				} else {
					againACN = append(againACN, r.ACN, r.ABN)
				}
				if _, ok := l.abns[r.ABN]; !ok {
					l.abns[r.ABN] = struct{}{}
					firstABN = append(firstABN, r.ABN, r.ACN)
				} else {
					againABN = append(againABN, r.ABN, r.ACN)
				}
			}
		}
		if code := m & 3; m&acnWritten == 0 || m>>2&3 != code {
			m = m&^(3<<2) | code<<2 | acnWritten
			if numeric {
				b := slot / slotsPerPart
				bitfields[b] = append(bitfields[b], "SET", "u2", "#"+strconv.FormatUint(uint64(slot%slotsPerPart), 10), code)
			} else {
				oddFields = append(oddFields, r.ACN, strconv.Itoa(int(code>>1)))
			}
		}
		if numeric {
			l.acns[slot] = m
		} else {
			l.oddACNs[r.ACN] = m
		}
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for b, ops := range bitfields {
			key := s.idsKey(l.v, b)
			for lo := 0; lo < len(ops); lo += 4 * batch {
				p.BitField(ctx, key, ops[lo:min(lo+4*batch, len(ops))]...)
			}
			p.SAdd(ctx, s.key(regKey, l.v, "idparts"), b)
			p.Expire(ctx, key, loadingRegisterTTL*time.Second)
		}
		// A field's first values are set, the others then appended by the
		// script (Eval: a pipeline cannot fall back from EVALSHA).
		for _, w := range []struct {
			key          string
			first, again []any
		}{{acnabn, firstACN, againACN}, {abn, firstABN, againABN}, {odd, oddFields, nil}} {
			for lo := 0; lo < len(w.first); lo += 2 * batch {
				p.HSet(ctx, w.key, w.first[lo:min(lo+2*batch, len(w.first))]...)
			}
			for lo := 0; lo < len(w.again); lo += 2 * batch {
				addPairsScript.Eval(ctx, p, []string{w.key}, w.again[lo:min(lo+2*batch, len(w.again))]...)
			}
		}
		for _, part := range regParts {
			p.Expire(ctx, s.key(regKey, l.v, part), loadingRegisterTTL*time.Second)
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

// switchRegisterScript makes generation ARGV[1] the one readers use and
// records it and the one it replaces in reg:settle, for settleRegister
// (the script cannot take their keys: the ids strings are in other
// slots). It answers 0, or 1 (stale) when the load is marked (ARGV[2]
// "1") and the marker no longer names ARGV[1] (docs/redis.md, "One
// register everywhere"). KEYS: reg:v, reg:pending, reg:settle.
var switchRegisterScript = redis.NewScript(pendingLua + `
local cur = redis.call('GET', KEYS[1]) or ''
if cur == ARGV[1] then return 0 end
if ARGV[2] == '1' and not pending(KEYS[2], ARGV[1]) then return 1 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
if cur ~= '' then redis.call('SADD', KEYS[3], cur) end
return 0
`)

// Commit switches readers to the new generation in one step (again,
// harmlessly, when they read it already), settles the expiry of the
// generations switched (settleRegister), then runs RefreshWatchKeys and
// clears the load's pending marker (regpending.go). A crash after the
// switch leaves reg:settle naming the new generation, whose keys still
// expire 24 h after the load's last Add: CompleteRegister, which every
// scale process runs when it opens its stores and the workers' sweep
// every 30 s, settles it first thing.
func (l *RegisterLoad) Commit(ctx context.Context) error {
	if l.done {
		return fmt.Errorf("redisstore: register load %s already finished", l.v)
	}
	l.done = true
	s := l.s
	stale, err := switchRegisterScript.Run(ctx, s.rdb, []string{s.key(regKey, "v"), s.key(regKey, "pending"), s.key(regKey, "settle")},
		l.v, boolArg(l.marked)).Int()
	if err != nil {
		return s.fail("switch register", err)
	}
	if stale == 1 {
		return s.staleLoad(l.v)
	}
	if err := s.settleRegister(ctx); err != nil {
		return err
	}
	if _, err := s.RefreshWatchKeys(ctx); err != nil {
		return err
	}
	_, err = l.pending(ctx, "drop")
	return err
}

// settledScript finishes settleRegister: when reg:v still names ARGV[1]
// (the generation it made persistent), it makes that generation's parts
// (under the namespace's tag, so here, checked) persistent, the others'
// expire in ARGV[2] seconds, and removes them all from reg:settle, 0;
// else (a load switched meanwhile) it puts ARGV[1] back in reg:settle,
// -1: settle again. KEYS: reg:v, reg:settle, then per generation of
// ARGV[4..] (in order) the ARGV[3] keys of its parts (regKeys).
var settledScript = redis.NewScript(`
if (redis.call('GET', KEYS[1]) or '') ~= ARGV[1] then
  if ARGV[1] ~= '' then redis.call('SADD', KEYS[2], ARGV[1]) end
  return -1
end
local n = tonumber(ARGV[3])
for i = 4, #ARGV do
  for j = 3 + (i - 4) * n, 2 + (i - 3) * n do
    if ARGV[i] == ARGV[1] then redis.call('PERSIST', KEYS[j]) else redis.call('EXPIRE', KEYS[j], ARGV[2]) end
  end
  redis.call('SREM', KEYS[2], ARGV[i])
end
return 0
`)

// settleRegister gives the generations reg:settle names (switchRegisterScript
// records them) their expiry: the one readers use (reg:v) none, the ones
// it replaced oldRegisterTTL, so a screen that read one finishes on
// consistent data. Their ids strings first, in every slot group; then
// their parts and the record, in settledScript, parts last because
// reg:<v>:idparts names the ids strings. Each step may be repeated: a
// crash anywhere leaves the record, and CompleteRegister settles again.
//
// A settler that read reg:v before another load's switch and makes the
// replaced generation persistent after that load's own settle finishes
// puts it back in the record (settledScript) and settles again; were it to
// die just between, that generation would stay without expiry until it is
// dropped by hand (docs/redis.md, "Register and notice sets").
func (s *Store) settleRegister(ctx context.Context) error {
	for {
		var live *redis.StringCmd
		var gens *redis.StringSliceCmd
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			live, gens = p.Get(ctx, s.key(regKey, "v")), p.SMembers(ctx, s.key(regKey, "settle"))
			return nil
		})
		if err != nil && err != redis.Nil {
			return s.fail("read the register generations to settle", err)
		}
		if len(gens.Val()) == 0 {
			return nil
		}
		keys := []string{s.key(regKey, "v"), s.key(regKey, "settle")}
		args := []any{live.Val(), oldRegisterTTL, len(regParts) + 1}
		var persist, expire []string
		for _, v := range gens.Val() {
			parts, ids, err := s.regKeys(ctx, v)
			if err != nil {
				return err
			}
			if v == live.Val() {
				persist = append(persist, ids...)
			} else {
				expire = append(expire, ids...)
			}
			keys, args = append(keys, parts...), append(args, v)
		}
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range persist {
				p.Persist(ctx, k)
			}
			for _, k := range expire {
				p.Expire(ctx, k, oldRegisterTTL*time.Second)
			}
			return nil
		}); err != nil {
			return s.fail("settle the register's expiry", err)
		}
		if n, err := settledScript.Run(ctx, s.rdb, keys, args...).Int(); err != nil || n == 0 {
			return s.fail("settle the register's expiry", err)
		}
	}
}

// Rollback drops the new generation, and the marker when it names it;
// the current register stays.
func (l *RegisterLoad) Rollback() error {
	if l.done {
		return nil
	}
	l.done = true
	ctx := context.Background()
	if _, err := l.pending(ctx, "drop"); err != nil {
		return err
	}
	parts, ids, err := l.s.regKeys(ctx, l.v)
	if err != nil {
		return err
	}
	// The ids strings first: reg:<v>:idparts names them.
	for _, keys := range [][]string{ids, parts} {
		if _, err := l.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, ks := range bySlot(keys) {
				p.Unlink(ctx, ks...)
			}
			return nil
		}); err != nil {
			return l.s.fail("drop register load", err)
		}
	}
	return nil
}

// register is one generation of the register, for lookups.
type register struct {
	s *Store
	v string // "" when no register was ever loaded
}

func (s *Store) currentRegister(ctx context.Context) (register, error) {
	v, err := s.rdb.Get(ctx, s.key(regKey, "v")).Result()
	if err == redis.Nil {
		return register{s: s}, nil
	}
	return register{s: s, v: v}, s.fail("read register version", err)
}

// regCompany is what a generation's identifier sets say of one ACN.
type regCompany struct {
	named bool     // its current name is not empty
	abns  []string // its register ABNs, the formed one first
}

// queueCompanies adds to p the reads of the entries of acns and returns
// the function that decodes them once p has run.
func (r register) queueCompanies(ctx context.Context, p redis.Pipeliner, acns []string) func() []regCompany {
	if r.v == "" || len(acns) == 0 {
		return func() []regCompany { return make([]regCompany, len(acns)) }
	}
	codes := r.queueCodes(ctx, p, acns)
	more := queueHMGet(ctx, p, r.s.key(regKey, r.v, "acnabn"), acns)
	var odd []string
	var oddAt []int
	for i, a := range acns {
		if _, ok := regSlot(a); !ok {
			odd, oddAt = append(odd, a), append(oddAt, i)
		}
	}
	oddNamed := queueHMGet(ctx, p, r.s.key(regKey, r.v, "odd"), odd)
	return func() []regCompany {
		c, m, o := codes(), more(), oddNamed()
		out := make([]regCompany, len(acns))
		for i, a := range acns {
			if c[i]&1 != 0 {
				out[i].abns = append(out[i].abns, formedABN(a))
			}
			out[i].named = c[i]&2 != 0
			out[i].abns = append(out[i].abns, splitList(m[i])...)
		}
		for j, i := range oddAt {
			out[i].named = o[j] == "1"
		}
		return out
	}
}

// queueACNsOf adds to p the reads of the register ACNs of abns and returns
// the function that decodes them (per ABN: the ACN it is formed of first,
// when that ACN holds it) once p has run.
func (r register) queueACNsOf(ctx context.Context, p redis.Pipeliner, abns []string) func() [][]string {
	if r.v == "" || len(abns) == 0 {
		return func() [][]string { return make([][]string, len(abns)) }
	}
	formed := make([]string, len(abns)) // "" (no slot, code 0) when not a formed ABN
	for i, b := range abns {
		formed[i], _ = formedOf(b)
	}
	codes := r.queueCodes(ctx, p, formed)
	more := queueHMGet(ctx, p, r.s.key(regKey, r.v, "abn"), abns)
	return func() [][]string {
		c, m := codes(), more()
		out := make([][]string, len(abns))
		for i := range abns {
			if c[i]&1 != 0 {
				out[i] = append(out[i], formed[i])
			}
			out[i] = append(out[i], splitList(m[i])...)
		}
		return out
	}
}

// queueCodes adds to p the reads of the ids entries of acns and returns
// the function that gives each ACN's code (named<<1 | formed; 0 for an ACN
// without a slot) once p has run.
func (r register) queueCodes(ctx context.Context, p redis.Pipeliner, acns []string) func() []int64 {
	type read struct {
		cmd *redis.IntSliceCmd
		at  []int
	}
	at, ops := map[uint32][]int{}, map[uint32][]any{} // by ids string b
	for i, a := range acns {
		if slot, ok := regSlot(a); ok {
			b := slot / slotsPerPart
			at[b] = append(at[b], i)
			ops[b] = append(ops[b], "u2", "#"+strconv.FormatUint(uint64(slot%slotsPerPart), 10))
		}
	}
	var reads []read
	for b, is := range at {
		for lo := 0; lo < len(is); lo += batch {
			hi := min(lo+batch, len(is))
			reads = append(reads, read{p.BitFieldRO(ctx, r.s.idsKey(r.v, b), ops[b][2*lo:2*hi]...), is[lo:hi]})
		}
	}
	return func() []int64 {
		out := make([]int64, len(acns))
		for _, rd := range reads {
			for j, v := range rd.cmd.Val() {
				out[rd.at[j]] = v
			}
		}
		return out
	}
}

// queueHMGet adds to p HMGETs of fields of key and returns the function
// that gives their values ("" for a missing field) once p has run.
func queueHMGet(ctx context.Context, p redis.Pipeliner, key string, fields []string) func() []string {
	var cmds []*redis.SliceCmd
	for i := 0; i < len(fields); i += batch {
		cmds = append(cmds, p.HMGet(ctx, key, fields[i:min(i+batch, len(fields))]...))
	}
	return func() []string {
		out := make([]string, 0, len(fields))
		for _, c := range cmds {
			for _, v := range c.Val() {
				out = append(out, str(v))
			}
		}
		return out[:len(fields)]
	}
}

// companies reads the entries of acns, roundTrip ACNs a round trip.
func (r register) companies(ctx context.Context, acns []string) ([]regCompany, error) {
	return inRoundTrips(ctx, r.s, "read the register", acns, func(p redis.Pipeliner, part []string) func() []regCompany {
		return r.queueCompanies(ctx, p, part)
	})
}

// acnsOf reads the register ACNs of abns, roundTrip ABNs a round trip.
func (r register) acnsOf(ctx context.Context, abns []string) ([][]string, error) {
	return inRoundTrips(ctx, r.s, "read the register", abns, func(p redis.Pipeliner, part []string) func() [][]string {
		return r.queueACNsOf(ctx, p, part)
	})
}

// inRoundTrips runs queue's reads of ids in one pipeline per roundTrip of
// them and returns their answers, in order.
func inRoundTrips[T any](ctx context.Context, s *Store, what string, ids []string, queue func(p redis.Pipeliner, part []string) func() []T) ([]T, error) {
	out := make([]T, 0, len(ids))
	for lo := 0; lo < len(ids); lo += roundTrip {
		var got func() []T
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			got = queue(p, ids[lo:min(lo+roundTrip, len(ids))])
			return nil
		})
		if err != nil {
			return nil, s.fail(what, err)
		}
		out = append(out, got()...)
	}
	return out, nil
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
	return inRoundTrips(ctx, s, "read stored records", fields, func(p redis.Pipeliner, part []string) func() []string {
		return queueHMGet(ctx, p, key, part)
	})
}

// RegisterNamer is a notice source that holds the register's names (the
// Elasticsearch store; the embedded store): Redis keeps none, so the bulk
// screen shows a matched company's current name from it.
type RegisterNamer interface {
	// RegisterNames returns the current name of each of acns: that of its
	// first row marked current, else of its first row ("" for none).
	RegisterNames(ctx context.Context, acns []string) ([]string, error)
}
