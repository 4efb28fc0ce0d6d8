package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/matcher"
)

// ScreenCopy is a replica's in-memory copy of what the bulk screen reads
// (docs/redis.md, "The replica's in-memory copy"): the published notices
// (summarySlab) and, with Options.ScreenCopy, the current register
// generation (regCopy). Start keeps it fresh in the background; Shutdown
// stops it.
type ScreenCopy struct {
	s       *Store
	keepReg bool // Options.ScreenCopy: hold the register too

	reg     atomic.Pointer[regCopy]
	refused string // a register generation the copy cannot hold (regBuilder.bad), under the load token

	// syncMu serialises reading and applying the publish log, and guards
	// n; mu guards what n points to against screens reading it.
	syncMu sync.Mutex
	mu     sync.RWMutex
	n      *summarySlab // nil: not loaded, or behind a trimmed publish log

	loading chan struct{} // holds a token while a load runs: one at a time
	kick    chan struct{}
	loop

	fromCopy, fromRedis, loads, behind atomic.Int64 // what Counts and Loads return
}

func newScreenCopy(s *Store, keepReg bool) *ScreenCopy {
	return &ScreenCopy{s: s, keepReg: keepReg, loading: make(chan struct{}, 1), kick: make(chan struct{}, 1)}
}

// ScreenCopy returns the store's in-memory screen copy.
func (s *Store) ScreenCopy() *ScreenCopy { return s.screenCopy }

// refreshEvery is how often a started copy refreshes without being asked.
const refreshEvery = time.Second

// Start loads the copy in the background and keeps it fresh until Shutdown.
func (c *ScreenCopy) Start(ctx context.Context) error {
	c.start(context.WithoutCancel(ctx), func(ctx context.Context) {
		t := time.NewTicker(refreshEvery)
		defer t.Stop()
		for {
			_, _, _ = c.refresh(ctx) // on an error (Redis down) retry at the next tick
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-c.kick:
			}
		}
	})
	return nil
}

// Counts returns how many screens read the register from the copy and how
// many read it from Redis instead (not loaded, another generation, or
// NOTICES_SCREEN_COPY off).
func (c *ScreenCopy) Counts() (fromCopy, fromRedis int64) {
	return c.fromCopy.Load(), c.fromRedis.Load()
}

// Loads returns how many times the notice copy was loaded, and how many
// times it was dropped, behind the publish log's retention, to be loaded.
func (c *ScreenCopy) Loads() (loads, behind int64) {
	return c.loads.Load(), c.behind.Load()
}

// load runs do holding the load token (one load at a time), waiting
// within ctx for another load.
func (c *ScreenCopy) load(ctx context.Context, do func() error) error {
	select {
	case c.loading <- struct{}{}:
	case <-ctx.Done():
		return c.s.fail("wait for the screen copy's load", ctx.Err())
	}
	defer func() { <-c.loading }()
	return do()
}

// refresh brings the notice copy up to date (notices) and, when it keeps
// the register, loads the current generation.
func (c *ScreenCopy) refresh(ctx context.Context) (regV string, n *summarySlab, err error) {
	if regV, n, err = c.notices(ctx); err != nil || !c.keepReg {
		return regV, n, err
	}
	return regV, n, c.load(ctx, func() error {
		if r := c.reg.Load(); (r != nil && r.v == regV) || (regV != "" && regV == c.refused) {
			return nil
		}
		return c.loadRegister(ctx, regV)
	})
}

// maxLoads is the most times one screen loads the notice copy before it
// gives up.
const maxLoads = 3

// notices brings the notice copy up to date and returns it with the
// register generation, first loading it when there is none.
func (c *ScreenCopy) notices(ctx context.Context) (regV string, n *summarySlab, err error) {
	for try := 0; ; try++ {
		if regV, n, err = c.sync(ctx); err != nil || n != nil {
			return regV, n, err
		}
		if try == maxLoads {
			return "", nil, errs.New(errs.BackendUnavailable, "the bulk screen's copy of the notices fell behind the publish log's retention (NOTICES_PUBLISH_LOG_RETENTION) during each of its last %d loads; retry shortly, and if this persists raise the retention above a load's duration", maxLoads)
		}
		if err := c.load(ctx, func() error { return c.loadNotices(ctx) }); err != nil {
			return "", nil, err
		}
	}
}

// current returns the register copy when it is generation v, else nil,
// asking the loader for v when the copy keeps the register.
func (c *ScreenCopy) current(v string) *regCopy {
	if r := c.reg.Load(); r != nil && r.v == v {
		return r
	}
	if c.keepReg {
		c.wake()
	}
	return nil
}

// Screen is the bulk screen of POST /v1/match, with the embedded store's
// semantics (see sqlite.Store.Screen): each normalised, distinct
// identifier lands in Matched, Unmatched or Unresolved, in the order
// given. It is answered from the replica's in-memory copy (ScreenCopy;
// loaded first when it is not), the register read from Redis when the
// copy holds no current one. The notice copy synced is exact as of its
// sync, which this screen made: if it has been dropped or replaced since,
// nothing changes it any more and the answer is still exact. The answer
// is one register's: when the names it read from the notice store may be
// another generation's (sameRegister), it is made again from that one.
func (s *Store) Screen(ctx context.Context, ids []ident.ID, f notice.Filter) (watch.ScreenResult, error) {
	gen := "" // the register generation to answer from; "" for the one the sync reads
	for try := 0; ; try++ {
		res, err := s.screen(ctx, ids, f, gen)
		var moved registerMoved
		if !errors.As(err, &moved) {
			return res, err
		}
		if try == maxRegisterTries {
			return res, errs.New(errs.BackendUnavailable, "the company register was replaced during each of this screen's %d tries; retry shortly", maxRegisterTries+1)
		}
		gen = string(moved)
	}
}

// screen is one try of Screen, from register generation gen ("" for the
// one the sync reads).
func (s *Store) screen(ctx context.Context, ids []ident.ID, f notice.Filter, gen string) (res watch.ScreenResult, err error) {
	res = watch.ScreenResult{Matched: []watch.Matched{}, Unmatched: []string{}, Unresolved: []string{}, UnmatchedCompanies: []watch.UnmatchedCompany{}}
	if res.Counts.Submitted = len(ids); len(ids) == 0 {
		return res, nil
	}
	c := s.screenCopy
	regV, synced, err := c.notices(ctx)
	if err != nil {
		return res, err
	}
	if gen == "" {
		gen = regV
	}
	reg := c.current(gen)
	l := &screenLookup{ids: ids, items: make([]copyItem, len(ids)), reg: reg, gen: gen}
	if reg == nil {
		if l.found, err = s.registerLookups(ctx, ids, gen); err != nil {
			return res, err
		}
	}
	c.mu.RLock() // synced may still be the copy that syncs change
	var once sync.Once
	unlock := func() { once.Do(c.mu.RUnlock) } // released once, by whichever comes first
	defer unlock()
	l.arenas = lookupAll(len(ids), func(part, lo, hi int) []int64 { return l.lookup(synced, part, lo, hi) })
	v := &summaryView{f: f, slab: synced, memo: make([]int8, len(synced.tuples))}
	if f.Q != nil || f.Company != nil {
		if v.passed, err = c.decodePassing(ctx, l.arenas, synced, f, unlock); err != nil {
			return res, err
		}
	}
	// The answer is made without the register names; fillNames puts them
	// in once the lock is released (a name not held is read over the
	// network, and no screen or sync may wait for that).
	screenAnswer(l, v, &res)
	unlock()
	if err := c.fillNames(ctx, l, &res); err != nil {
		return res, err
	}
	if reg == nil {
		c.fromRedis.Add(1)
	} else {
		c.fromCopy.Add(1)
	}
	return res, nil
}

// decodePassing decodes the summaries of the seqs in arenas, releases the
// copy's read lock (unlock) and returns those passing f by seq; a q is
// matched on the text of those passing the rest, read from the notice
// source (the decoded strings stay valid: see summarySlab).
func (c *ScreenCopy) decodePassing(ctx context.Context, arenas [][]int64, n *summarySlab, f notice.Filter, unlock func()) (map[int64]*notice.Notice, error) {
	seqs := sortedSet(slices.Concat(arenas...))
	decoded := make([]notice.Notice, len(seqs)) // one allocation for all
	ptrs := make([][3]string, len(seqs))
	noQ := f
	noQ.Q = nil
	passed := map[int64]*notice.Notice{}
	for i, q := range seqs {
		if n.decode(q, &decoded[i], &ptrs[i]) && matcher.FilterMatches(noQ, &decoded[i], nil) {
			passed[q] = &decoded[i]
		}
	}
	unlock()
	if f.Q == nil || len(passed) == 0 {
		return passed, nil
	}
	full, err := c.s.source.NoticesBySeq(ctx, slices.Sorted(maps.Keys(passed)))
	if err != nil {
		return nil, err
	}
	withText := make(map[int64]*notice.Notice, len(full))
	for i := range full {
		if p := passed[full[i].Seq]; p != nil && matcher.FilterMatches(f, &full[i], nil) {
			withText[full[i].Seq] = p
		}
	}
	return withText, nil
}

// screenLookup is what a screen found of its identifiers: items[i] of
// ids[i], its seqs in arenas, its company from reg or, when reg is nil,
// from the register in Redis (found[i]), both of generation gen.
type screenLookup struct {
	ids    []ident.ID
	items  []copyItem
	arenas [][]int64
	reg    *regCopy
	found  []regLookup
	gen    string
}

// copyItem is what a screen found of one identifier, without a pointer
// (50,000 of them cost the garbage collector nothing): its own notices'
// seqs are arenas[arena][from:mid], its counterparts' [mid:to].
type copyItem struct {
	from, mid, to int32
	co            int32 // its company in the register copy: an ACN's own, an ABN's primary ACN's
	arena         uint8
	flags         uint8
}

const (
	itemInRegister uint8 = 1 << iota // the register knows it (an ABN: co is its primary ACN's company)
	itemNeedsName                    // it has a current name (shown when it matches)
)

func (o *copyItem) has(f uint8) bool { return o.flags&f != 0 }

// acn returns the ACN the answer shows for identifier i ("" for none):
// an ACN itself, or an ABN's register ACN.
func (l *screenLookup) acn(i int) string {
	id, o := l.ids[i], &l.items[i]
	switch {
	case l.reg == nil:
		return l.found[i].acn
	case id.Kind == ident.ACN:
		return id.Value
	case !o.has(itemInRegister):
		return ""
	}
	if n, _ := nineDigits(id.Value[2:]); n == l.reg.acns[o.co] {
		return id.Value[2:] // nearly every ABN: no string made
	}
	return l.reg.acn(o.co)
}

// lookup fills the items of ids[lo:hi] from n and returns the arena
// (number part) backing their seqs.
func (l *screenLookup) lookup(n *summarySlab, part, lo, hi int) []int64 {
	reg := l.reg
	arena := make([]int64, 0, hi-lo) // backs every item's seq lists
	var acns []string                // an ABN's register ACNs, reused
	for i := lo; i < hi; i++ {
		id := l.ids[i]
		o := copyItem{arena: uint8(part), from: int32(len(arena))}
		arena = n.post.get(id.Value, arena)
		o.mid = int32(len(arena))
		var others []string // the values whose notices count as its counterparts' (an ACN's prefix-form ABN is looked up by key)
		switch {
		case reg == nil:
			if l.found[i].known {
				o.flags = itemInRegister | itemNeedsName
			}
			others = l.found[i].others
		case id.Kind == ident.ACN:
			co, ok := reg.company(id.Value)
			if !ok {
				break
			}
			if o.co = co; reg.isNamed(co) {
				o.flags = itemInRegister | itemNeedsName
			}
			if k, ok := reg.prefixABNKey(co); ok {
				arena = n.post.getKey(k, arena)
			}
			others = reg.moreABNs[co]
		default:
			acns = reg.appendACNsOf(acns[:0], id.Value)
			if acn := primaryACN(id.Value, acns); acn != "" {
				o.co, _ = reg.company(acn) // a register ACN
				if o.flags = itemInRegister; reg.isNamed(o.co) {
					o.flags |= itemNeedsName
				}
			}
			others = acns
		}
		for _, v := range others {
			arena = n.post.get(v, arena)
		}
		o.to = int32(len(arena))
		if o.to-o.mid > 1 { // several values' seqs may interleave and repeat
			o.to = o.mid + int32(len(sortedSet(arena[o.mid:o.to])))
			arena = arena[:o.to]
		}
		l.items[i] = o
	}
	return arena
}

// fillNames puts the register names in res (made without them, in the
// order of l.ids), held or read from the notice source (RegisterNames),
// with none of the copy's locks held, as that read may be slow. A name the
// source lacks leaves the match its latest notice's. Names read are held
// (and used) only once sameRegister says they are l.gen's.
func (c *ScreenCopy) fillNames(ctx context.Context, l *screenLookup, res *watch.ScreenResult) error {
	var need []int    // the items whose names are wanted
	var cos []int32   // their companies
	var at []**string // their names to set: a match's or an unmatched company's
	k, u := 0, 0
	for i := range l.items {
		var name **string
		switch v := l.ids[i].Value; {
		case k < len(res.Matched) && res.Matched[k].Identifier == v:
			name, k = &res.Matched[k].CompanyName, k+1
		case u < len(res.UnmatchedCompanies) && res.UnmatchedCompanies[u].Identifier == v:
			name, u = &res.UnmatchedCompanies[u].CompanyName, u+1
		default:
			continue
		}
		if l.items[i].has(itemNeedsName) {
			need, cos, at = append(need, i), append(cos, l.items[i].co), append(at, name)
		}
	}
	names := make([]string, len(need))
	err := l.reg.names(cos, names, func(missing []int) ([]string, error) {
		acns := make([]string, len(missing))
		for j, k := range missing {
			acns[j] = l.acn(need[k])
		}
		if namer, ok := c.s.source.(RegisterNamer); ok {
			names, err := namer.RegisterNames(ctx, acns)
			if err != nil {
				return nil, err
			}
			return names, c.s.sameRegister(ctx, l.gen)
		}
		return make([]string, len(acns)), nil // a source without names
	})
	if err != nil {
		return err
	}
	for j, name := range at {
		if names[j] != "" {
			*name = &names[j]
		}
	}
	return nil
}

// parallelFrom is the smallest screen whose lookups are split among the
// processors: below it a goroutine costs more than it saves. (A variable
// so that a test can split small screens.)
var parallelFrom = 4096

// lookupAll runs each over [0, n), n > 0, split into ranges numbered from
// 0 (one per processor, at most 256: copyItem.arena; one when n is small),
// and returns their answers by number.
func lookupAll(n int, each func(part, lo, hi int) []int64) [][]int64 {
	parts := min(runtime.GOMAXPROCS(0), 256)
	if n < parallelFrom {
		parts = 1
	}
	step := (n + parts - 1) / parts
	out := make([][]int64, (n+step-1)/step)
	var wg sync.WaitGroup
	for part := range out {
		wg.Go(func() { out[part] = each(part, part*step, min(part*step+step, n)) })
	}
	wg.Wait()
	return out
}

// expand is Store.expand answered from the copy when it is current (done
// false otherwise: the caller reads Redis).
func (c *ScreenCopy) expand(ctx context.Context, ids []string) (exp expansion, done bool, err error) {
	if !c.keepReg {
		return exp, false, nil
	}
	regV, synced, err := c.sync(ctx)
	if err != nil {
		return exp, true, err
	}
	reg := c.current(regV)
	if synced == nil || reg == nil {
		c.wake()
		return exp, false, nil
	}
	c.mu.RLock() // as in screen
	defer c.mu.RUnlock()
	exp.regv = regV
	keys := make(map[string]struct{}, len(ids)*2)
	companies := make(map[string]struct{}, len(ids))
	var acns []string // the identifier's register ACNs, or the ACN itself
	var seqs []int64
	for _, v := range ids {
		keys[v] = struct{}{}
		company, known := v, false
		if len(v) == 9 {
			co, ok := reg.company(v)
			known, acns = ok && reg.isNamed(co), append(acns[:0], v)
		} else if acns = reg.appendACNsOf(acns[:0], v); len(acns) > 0 {
			company, known = primaryACN(v, acns), true
		} else {
			exp.ixABNs = append(exp.ixABNs, v)
		}
		companies[company] = struct{}{}
		for _, a := range acns {
			keys[a] = struct{}{}
			if co, ok := reg.company(a); ok {
				for _, b := range reg.abnsOf(co) {
					keys[b] = struct{}{}
				}
			}
		}
		if seqs = synced.post.get(v, seqs[:0]); !known && len(seqs) == 0 {
			exp.unresolved = append(exp.unresolved, v)
		}
	}
	slices.Sort(exp.ixABNs)
	exp.keys, exp.companies = sortBoth(keys, companies)
	return exp, true, nil
}

// wake asks the background loader to refresh the copy now.
func (c *ScreenCopy) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// changeBatch is the most publish log entries one XRANGE reads.
const changeBatch = 1000

// sync reads the register generation and applies the publish log past the
// notice copy, in one round trip when the log has nothing new, and returns
// the copy it brought up to date: nil when there is none, or the log was
// trimmed past it (then the copy is dropped, to be reloaded).
func (c *ScreenCopy) sync(ctx context.Context) (regV string, synced *summarySlab, err error) {
	s := c.s
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	n := c.n
	var vCmd, trimCmd *redis.StringCmd
	var xCmd *redis.XMessageSliceCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		vCmd = p.Get(ctx, s.key(regKey, "v"))
		if n != nil {
			trimCmd, xCmd = p.Get(ctx, s.log.Keys().Trimmed), p.XRangeN(ctx, s.log.Keys().Log, "("+n.last, "+", changeBatch)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", nil, s.fail("read the publish log", err)
	}
	if regV = vCmd.Val(); n == nil {
		return regV, nil, nil
	}
	page := publog.EntriesOf(xCmd.Val())
	for gone := trimCmd.Val() != "" && publog.IDLess(n.last, trimCmd.Val()); !gone; {
		if len(page) > 0 {
			c.mu.Lock()
			n.apply(page)
			c.mu.Unlock()
		}
		if len(page) < changeBatch {
			return regV, n, nil
		}
		if page, gone, err = s.log.Read(ctx, n.last, changeBatch); err != nil {
			return "", nil, err
		}
	}
	// Entries past the copy may have been trimmed away: reload.
	c.behind.Add(1)
	c.n = nil
	return regV, nil, nil
}

// loadNotices builds a new notice copy, unless there is one, from the
// notice source up to the seq published, at the publish log position read
// before: a notice published meanwhile is in the log past it, and applying
// a seq's current summary again is harmless.
func (c *ScreenCopy) loadNotices(ctx context.Context) error {
	c.syncMu.Lock()
	loaded := c.n != nil
	c.syncMu.Unlock()
	if loaded {
		return nil
	}
	head, err := c.s.log.Head(ctx)
	if err != nil {
		return err
	}
	through, err := c.s.log.Published(ctx)
	if err != nil {
		return err
	}
	fresh := &summarySlab{last: head}
	err = c.s.source.NoticeSummaries(ctx, through, func(n *notice.Notice) error {
		fresh.put(n.Seq, n)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: load the screen copy's notices: %w", err)
	}
	c.syncMu.Lock()
	c.n = fresh
	c.syncMu.Unlock()
	c.loads.Add(1)
	return nil
}

// scanCount is HSCAN's COUNT when a register copy loads.
const scanCount = 10000

// loadRegister builds the copy of register generation v aside and swaps
// it in whole if v is still current.
func (c *ScreenCopy) loadRegister(ctx context.Context, v string) error {
	s := c.s
	var b regBuilder
	if v != "" {
		parts, err := s.rdb.SMembers(ctx, s.key(regKey, v, "idparts")).Result()
		if err != nil {
			return s.fail("load the screen copy", err)
		}
		for _, part := range parts {
			n, err := strconv.ParseUint(part, 10, 32)
			if err != nil {
				return fmt.Errorf("redisstore: %s holds %q, not the number of an ids string", s.key(regKey, v, "idparts"), part)
			}
			bits, err := s.rdb.Get(ctx, s.idsKey(v, uint32(n))).Bytes()
			if err != nil && err != redis.Nil {
				return s.fail("load the screen copy", err)
			}
			b.idsPart(uint32(n), bits)
		}
		for part, each := range map[string]func(field, value string){"odd": func(acn, named string) { b.entry(acn, named == "1") }, "abn": b.abn} {
			for cursor := uint64(0); ; {
				kv, next, err := s.rdb.HScan(ctx, s.key(regKey, v, part), cursor, "", scanCount).Result()
				if err != nil {
					return s.fail("load the screen copy", err)
				}
				for i := 0; i+1 < len(kv); i += 2 {
					each(kv[i], kv[i+1]) // HSCAN may return a field twice
				}
				if cursor = next; cursor == 0 {
					break
				}
			}
		}
	}
	r := b.build(v)
	if r == nil { // screens read this generation from Redis
		c.refused = v
		return nil
	}
	cur, err := s.rdb.Get(ctx, s.key(regKey, "v")).Result()
	if err != nil && err != redis.Nil {
		return s.fail("load the screen copy", err)
	}
	if cur == v { // else replaced meanwhile: the next refresh loads the new one
		c.reg.Store(r)
	}
	return nil
}
