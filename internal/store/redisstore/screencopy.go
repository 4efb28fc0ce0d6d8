package redisstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
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

// ScreenCopy is a replica's in-memory copy of what the bulk screen reads:
// the published notices' summaries with an index of them by identifier
// (noticeCopy), always, and with Options.ScreenCopy (NOTICES_SCREEN_COPY)
// the current register generation (regCopy). Redis keeps no copy of the
// notices: the notice copy is loaded from the notice source
// (NoticeSource.NoticeSummaries: Elasticsearch, one point in time) and
// then follows the publish log (package publog: the publish script
// appends one entry per notice, with its summary). With the register copy
// too a screen of 50,000 identifiers costs one round trip to Redis.
//
// Freshness is exact. Each screen first reads, in one pipeline, the
// register generation (reg:v) and the publish log past the copy's
// position; new entries are applied before the screen runs, so a screen
// that starts after a publish sees its notices. A notice copy not loaded
// yet, or behind a publish log trimmed past its position
// (NOTICES_PUBLISH_LOG_RETENTION), is loaded again by the screen that
// finds it so, which waits for the load (within its context; one load at
// a time, which every waiting screen shares). A register copy of another
// generation, or none, makes the screen read the register from Redis
// (Store.registerLookups) while the copy reloads in the background; a new
// register is built aside and swapped in whole, so no screen mixes two
// generations.
//
// Start loads the copy in the background and keeps it near the head of
// the publish log (every second), so screens rarely apply more than a few
// entries; Shutdown stops it.
type ScreenCopy struct {
	s       *Store
	keepReg bool // Options.ScreenCopy: hold the register too
	wait    bool // Options.ScreenCopyWait

	reg atomic.Pointer[regCopy]

	// syncMu serialises reading and applying the change log, and
	// swapping the notice copy; mu guards n against screens reading it.
	syncMu sync.Mutex
	mu     sync.RWMutex
	n      *noticeCopy // nil: not loaded, or behind a trimmed change log

	loading chan struct{} // holds a token while a load runs: one at a time
	kick    chan struct{}
	stop    context.CancelFunc
	done    chan struct{}

	// fromCopy and fromRedis count the screens answered with the register
	// from the copy and from Redis; loads counts the notice copy's loads,
	// behind the times it found itself behind the publish log's retention
	// (and dropped itself to reload).
	fromCopy, fromRedis atomic.Int64
	loads, behind       atomic.Int64
}

func newScreenCopy(s *Store, keepReg, wait bool) *ScreenCopy {
	return &ScreenCopy{s: s, keepReg: keepReg, wait: wait, loading: make(chan struct{}, 1), kick: make(chan struct{}, 1)}
}

// ScreenCopy returns the store's in-memory screen copy.
func (s *Store) ScreenCopy() *ScreenCopy { return s.screenCopy }

// refreshEvery is how often a started copy follows the change log and the
// register generation without being asked.
const refreshEvery = time.Second

// Start loads the copy in the background and keeps it fresh until
// Shutdown. Screens read the register from Redis until it is loaded, and
// wait for the notices' load.
func (c *ScreenCopy) Start(ctx context.Context) error {
	ctx, c.stop = context.WithCancel(context.WithoutCancel(ctx))
	c.done = make(chan struct{})
	go func() {
		defer close(c.done)
		t := time.NewTicker(refreshEvery)
		defer t.Stop()
		for {
			_ = c.refresh(ctx) // on an error (Redis down) retry at the next tick
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-c.kick:
			}
		}
	}()
	return nil
}

// Shutdown stops the background loading, waiting for a load under way to
// see the cancellation.
func (c *ScreenCopy) Shutdown(ctx context.Context) error {
	if c.stop == nil {
		return nil
	}
	c.stop()
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Counts returns how many screens read the register from the copy and how
// many read it from Redis instead (not loaded, another generation, or
// NOTICES_SCREEN_COPY off).
func (c *ScreenCopy) Counts() (fromCopy, fromRedis int64) {
	return c.fromCopy.Load(), c.fromRedis.Load()
}

// Loads returns how many times the notice copy was loaded, and how many
// times it found itself behind the publish log's retention (entries past
// it trimmed away) and was dropped to be loaded again.
func (c *ScreenCopy) Loads() (loads, behind int64) {
	return c.loads.Load(), c.behind.Load()
}

// lockLoad takes the load token, waiting within ctx while another load
// runs.
func (c *ScreenCopy) lockLoad(ctx context.Context) error {
	select {
	case c.loading <- struct{}{}:
		return nil
	case <-ctx.Done():
		return c.s.fail("wait for the screen copy's load", ctx.Err())
	}
}

func (c *ScreenCopy) unlockLoad() { <-c.loading }

// refresh brings the copy up to date: it follows the change log (or
// reloads the notices when the copy is behind a trimmed log) and, when it
// keeps the register, loads the current register generation when the
// copy has another.
func (c *ScreenCopy) refresh(ctx context.Context) error {
	if err := c.lockLoad(ctx); err != nil {
		return err
	}
	defer c.unlockLoad()
	for try := 0; try < 3; try++ {
		regV, n, err := c.sync(ctx)
		if err != nil {
			return err
		}
		if n == nil {
			if err := c.loadNotices(ctx); err != nil {
				return err
			}
			continue
		}
		if !c.keepReg {
			return nil
		}
		if r := c.reg.Load(); r != nil && r.v == regV {
			return nil
		}
		if err := c.loadRegister(ctx, regV); err != nil {
			return err
		}
	}
	return nil
}

// maxLoads is the most times one screen loads the notice copy (or finds
// it swapped under it) before it gives up.
const maxLoads = 3

// notices brings the notice copy up to date and returns it with the
// register generation, first loading it (and waiting within ctx) when
// there is none or it is behind a trimmed publish log.
func (c *ScreenCopy) notices(ctx context.Context) (regV string, n *noticeCopy, err error) {
	for try := 0; ; try++ {
		if regV, n, err = c.sync(ctx); err != nil || n != nil {
			return regV, n, err
		}
		if try == maxLoads {
			return "", nil, errs.New(errs.BackendUnavailable, "the bulk screen's copy of the notices fell behind the publish log's retention (NOTICES_PUBLISH_LOG_RETENTION) during each of its last %d loads; retry shortly, and if this persists raise the retention above a load's duration", maxLoads)
		}
		if err := c.lockLoad(ctx); err != nil {
			return "", nil, err
		}
		c.mu.RLock()
		loaded := c.n != nil
		c.mu.RUnlock()
		if !loaded {
			err = c.loadNotices(ctx)
		}
		c.unlockLoad()
		if err != nil {
			return "", nil, err
		}
	}
}

// readLock takes the copy's read lock and returns its release, which may
// be called again (only the first call releases).
func (c *ScreenCopy) readLock() (unlock func()) {
	c.mu.RLock()
	var once sync.Once
	return func() { once.Do(c.mu.RUnlock) }
}

// screen answers a screen from the copy into res: the notices from the
// notice copy (loaded first when it is not), the register from the
// register copy when it is current, else from Redis.
func (c *ScreenCopy) screen(ctx context.Context, ids []ident.ID, f notice.Filter, res *watch.ScreenResult) error {
	for try := 0; ; try++ {
		regV, synced, err := c.notices(ctx)
		if err != nil {
			return err
		}
		reg := c.reg.Load()
		if c.keepReg && (reg == nil || reg.v != regV) {
			if c.wait {
				if err := c.refresh(ctx); err != nil {
					return err
				}
				if regV, synced, err = c.notices(ctx); err != nil {
					return err
				}
				reg = c.reg.Load()
			} else {
				c.wake()
			}
		}
		var done bool
		if c.keepReg && reg != nil && reg.v == regV {
			done, err = c.screenCopy(ctx, ids, f, reg, synced, res)
		} else {
			done, err = c.screenRedisRegister(ctx, ids, f, synced, res)
		}
		if done || err != nil {
			return err
		}
		if try == maxLoads {
			return errs.New(errs.BackendUnavailable, "the bulk screen's copy of the notices was reloaded during each of the last %d tries of this screen; retry shortly", maxLoads)
		}
	}
}

// screenRedisRegister answers a screen with the register read from Redis
// (Store.registerLookups) and the notices from synced; done is false,
// with res untouched, when synced was dropped or replaced meanwhile.
func (c *ScreenCopy) screenRedisRegister(ctx context.Context, ids []ident.ID, f notice.Filter, synced *noticeCopy, res *watch.ScreenResult) (done bool, err error) {
	found, counterparts, err := c.s.registerLookups(ctx, ids)
	if err != nil {
		return true, err
	}
	unlock := c.readLock()
	defer unlock()
	if c.n != synced {
		return false, nil
	}
	for i := range found {
		o := &found[i]
		o.own = synced.post.get(o.self, nil)
		for _, v := range counterparts[i] {
			o.theirs = synced.post.get(v, o.theirs)
		}
		if len(counterparts[i]) > 1 {
			o.theirs = sortedSet(o.theirs)
		}
	}
	err = c.s.screenResult(ctx, ids, found, f, func(seqs []int64, into []notice.Notice, ptrs [][3]string, have []bool) error {
		for i, q := range seqs {
			have[i] = synced.sums.decode(q, &into[i], &ptrs[i])
		}
		unlock() // a q filter reads the notice source next: not under the lock
		return nil
	}, res)
	unlock()
	if err != nil {
		return true, err
	}
	c.fromRedis.Add(1)
	return true, c.s.fillRegisterNames(ctx, found, res)
}

// screenCopy answers a screen wholly from the copy: the register copy reg
// (current) and the notice copy n; done is false, with res untouched,
// when n was dropped or replaced since it was brought up to date.
func (c *ScreenCopy) screenCopy(ctx context.Context, ids []ident.ID, f notice.Filter, reg *regCopy, synced *noticeCopy, res *watch.ScreenResult) (done bool, err error) {
	unlock := c.readLock()
	defer unlock()
	n := c.n
	if n != synced {
		return false, nil
	}
	items := make([]copyItem, len(ids))
	arenas := make([][]int64, lookupParts(len(ids)))
	lookupAll(len(ids), func(part, lo, hi int) {
		arenas[part] = lookupRange(uint8(part), ids[lo:hi], items[lo:hi], reg, n)
	})
	// The answer is made without the register names; fillNames puts them
	// in once the lock is released (a name not held is read over the
	// network, and no screen or sync may wait for that).
	if f.Q == nil && f.Company == nil {
		copyResult(ids, items, arenas, f, n, reg, res)
	} else {
		found := screenItems(ids, items, arenas, reg)
		err := c.s.screenResult(ctx, ids, found, f, func(seqs []int64, into []notice.Notice, ptrs [][3]string, have []bool) error {
			for i, q := range seqs {
				have[i] = n.sums.decode(q, &into[i], &ptrs[i])
			}
			// A q filter reads the notice source next: not under the lock (the
			// decoded strings stay valid, see summarySlab).
			unlock()
			return nil
		}, res)
		if err != nil {
			return true, err
		}
	}
	unlock()
	if err := c.fillNames(ctx, reg, ids, items, res); err != nil {
		return true, err
	}
	c.fromCopy.Add(1)
	return true, nil
}

// copyItem is what the copy found of one identifier, without a pointer
// (50,000 of them cost the garbage collector nothing): its seqs are
// arenas[arena][from:mid] (its own notices) and [mid:to] (its
// counterparts'), its company co (when hasCo) the one whose ACN the
// answer shows and whose name (when needsName and it matched) fillNames
// puts in the answer.
type copyItem struct {
	from, mid, to int32
	co            int32
	arena         uint8
	flags         uint8
}

const (
	itemHasCo      uint8 = 1 << iota // co is the identifier's company (its ACN's, or an ABN's primary ACN's)
	itemInRegister                   // the register knows it
	itemNeedsName                    // co has a current name (shown when it matches)
	itemACNSuffix                    // an ABN whose company's ACN is its last nine digits
)

func (o *copyItem) has(f uint8) bool { return o.flags&f != 0 }

// seqs returns the item's own and counterparts' seqs.
func (o *copyItem) seqs(arenas [][]int64) (own, theirs []int64) {
	a := arenas[o.arena]
	return a[o.from:o.mid:o.mid], a[o.mid:o.to:o.to]
}

// acn returns the ACN the answer shows for the identifier id ("" for
// none): an ACN itself, or an ABN's register ACN.
func (o *copyItem) acn(id ident.ID, reg *regCopy) string {
	switch {
	case id.Kind == ident.ACN:
		return id.Value
	case !o.has(itemHasCo):
		return ""
	case o.has(itemACNSuffix):
		return id.Value[2:]
	}
	return reg.acn(o.co)
}

// screenItems turns the copy's items into the screenItems of
// Store.screenResult (for a filter with q or company), without the
// register names (fillNames puts them in the answer).
func screenItems(ids []ident.ID, items []copyItem, arenas [][]int64, reg *regCopy) []screenItem {
	found := make([]screenItem, len(items))
	for i := range items {
		o := &items[i]
		own, theirs := o.seqs(arenas)
		found[i] = screenItem{self: ids[i].Value, acn: o.acn(ids[i], reg),
			inRegister: o.has(itemInRegister), own: own, theirs: theirs}
	}
	return found
}

// copyResult is Store.screenResult for a filter without q or company,
// answered from the copy under its read lock: each candidate's filters are
// decided on its summary's combination of coded fields (once per
// combination, by matcher.FilterMatches, so with its semantics), published
// instants are read only to choose between two passing notices, and only
// each match's latest notice is decoded, straight into its answer. The
// register names are left out (fillNames puts them in).
func copyResult(ids []ident.ID, items []copyItem, arenas [][]int64, f notice.Filter, n *noticeCopy, reg *regCopy, res *watch.ScreenResult) {
	pass := codedFilter{f: f, slab: &n.sums, memo: make([]int8, len(n.sums.tuples))}
	withNotices, known := 0, 0 // upper bounds of the matched and unmatched
	for i := range items {
		if o := &items[i]; o.to > o.from {
			withNotices++
		} else if o.has(itemInRegister) {
			known++
		}
	}
	res.Matched = slices.Grow(res.Matched, withNotices)
	res.Unmatched = slices.Grow(res.Unmatched, known+withNotices)
	res.UnmatchedCompanies = slices.Grow(res.UnmatchedCompanies, known+withNotices)
	res.Unresolved = slices.Grow(res.Unresolved, len(items)-withNotices-known)
	strs := make([]string, 0, 3*withNotices) // what the answers point to
	var purposes []string                    // one identifier's, reused
	for i := range items {
		o := &items[i]
		own, theirs := o.seqs(arenas)
		count := 0
		best, insolvency := newest{seq: -1}, newest{seq: -1}
		purposes = purposes[:0]
		for li, l := range [2][]int64{own, theirs} {
			for _, q := range l {
				if li == 1 && slices.Contains(own, q) {
					continue // carries both identifiers (counted once)
				}
				if !pass.passes(q) {
					continue
				}
				count++
				best.offer(q, &n.sums)
				p := n.sums.purpose(q)
				purposes = addPurpose(purposes, p)
				if !notice.EqualFoldASCII(p, notice.DeregistrationPurpose) {
					insolvency.offer(q, &n.sums)
				}
			}
		}
		if count == 0 {
			noMatch(res, ids[i].Value, o.acn(ids[i], reg), o.has(itemInRegister) || len(own) > 0)
			continue
		}
		var latest summaryLatest
		n.sums.decodeLatest(best.seq, &latest)
		m := matchOf(ids[i], o.acn(ids[i], reg), count, &latest, &strs)
		m.NoticePurposes = sortedPurposes(purposes)
		if insolvency.seq >= 0 {
			var l summaryLatest
			n.sums.decodeLatest(insolvency.seq, &l)
			m.Insolvency, m.LatestInsolvencyNotice = true, l.notice()
		}
		res.Matched = append(res.Matched, m)
	}
	res.Counts.Matched, res.Counts.Unmatched, res.Counts.Unresolved = len(res.Matched), len(res.Unmatched), len(res.Unresolved)
}

// newest is the newest of a company's passing notices offered so far
// (seq -1: none): the latest publication, ties by higher seq; published
// instants are read only to choose between two.
type newest struct {
	seq int64
	at  string // seq's published instant once read
}

func (b *newest) offer(q int64, sums *summarySlab) {
	if b.seq < 0 {
		b.seq = q
		return
	}
	if b.at == "" {
		b.at = sums.publishedAt(b.seq)
	}
	if at := sums.publishedAt(q); at > b.at || (at == b.at && q > b.seq) {
		b.seq, b.at = q, at
	}
}

// codedFilter decides a filter without q or company on summaries' coded
// fields, remembering the answer for each combination (memo: 0 not yet
// decided, 1 passes, -1 fails).
type codedFilter struct {
	f    notice.Filter
	slab *summarySlab
	memo []int8
}

// passes reports whether seq has a summary that passes the filter.
func (c *codedFilter) passes(seq int64) bool {
	t, ok := c.slab.tupleAt(seq)
	if !ok {
		return false
	}
	if p := c.memo[t]; p != 0 {
		return p > 0
	}
	var n notice.Notice
	c.slab.decodeCodes(c.slab.tuples[t], &n, new(string))
	p := matcher.FilterMatches(c.f, &n, nil)
	c.memo[t] = -1
	if p {
		c.memo[t] = 1
	}
	return p
}

// lookupRange finds, for each of ids, its register counterparts and the
// seqs of the notices carrying it or them, into items (of the same
// length), from the register copy reg and the notice copy n, and returns
// the arena backing the items' seqs. A company's prefix-form ABN is
// looked up by its number, without making its string.
func lookupRange(part uint8, ids []ident.ID, items []copyItem, reg *regCopy, n *noticeCopy) []int64 {
	arena := make([]int64, 0, len(ids)) // backs every item's seq lists
	var acns []string                   // an ABN's register ACNs, reused
	for i, id := range ids {
		o := copyItem{arena: part}
		o.from = int32(len(arena))
		arena = n.post.get(id.Value, arena)
		o.mid = int32(len(arena))
		others := 0
		if id.Kind == ident.ACN {
			if co, ok := reg.company(id.Value); ok {
				o.co, o.flags = co, itemHasCo
				if reg.isNamed(co) {
					o.flags |= itemInRegister | itemNeedsName
				}
				if k, ok := reg.prefixABNKey(co); ok {
					arena = n.post.getKey(k, arena)
					others++
				}
				for _, b := range reg.moreABNs[co] {
					arena = n.post.get(b, arena)
					others++
				}
			}
		} else if co, ok := reg.prefixCompany(id.Value); ok && len(reg.moreACNs[id.Value]) == 0 {
			// Nearly every ABN: its one ACN is its last nine digits.
			o.co, o.flags = co, itemHasCo|itemInRegister|itemACNSuffix
			if reg.isNamed(co) {
				o.flags |= itemNeedsName
			}
			arena = n.post.get(id.Value[2:], arena)
			others = 1
		} else {
			acns = reg.appendACNsOf(acns[:0], id.Value)
			if acn := primaryACN(id.Value, acns); acn != "" {
				o.flags = itemInRegister
				if co, ok := reg.company(acn); ok {
					o.co, o.flags = co, o.flags|itemHasCo
					if len(id.Value) == 11 && acn == id.Value[2:] {
						o.flags |= itemACNSuffix
					}
					if reg.isNamed(co) {
						o.flags |= itemNeedsName
					}
				}
			}
			for _, a := range acns {
				arena = n.post.get(a, arena)
			}
			others = len(acns)
		}
		o.to = int32(len(arena))
		if others > 1 {
			o.to = o.mid + int32(len(sortedSet(arena[o.mid:o.to])))
			arena = arena[:o.to]
		}
		items[i] = o
	}
	return arena
}

// fillNames puts the register name of every match and unmatched company
// whose company has one in its answer (res.Matched and
// res.UnmatchedCompanies, made without them, in the order of ids): the
// names the register copy holds, and those it lacks read from the notice
// source (Store.registerNames: Redis keeps no names) and held. It runs
// with none of the copy's locks held, as that read may be slow. A name the
// source lacks (its register not yet the copy's generation) leaves the
// match its latest notice's, as the screen from Redis answers then.
func (c *ScreenCopy) fillNames(ctx context.Context, reg *regCopy, ids []ident.ID, items []copyItem, res *watch.ScreenResult) error {
	var cos []int32
	var at []**string // the names of cos to set: a match's or an unmatched company's
	k, u := 0, 0
	for i := range items {
		var name **string
		switch {
		case k < len(res.Matched) && res.Matched[k].Identifier == ids[i].Value:
			name = &res.Matched[k].CompanyName
			k++
		case u < len(res.UnmatchedCompanies) && res.UnmatchedCompanies[u].Identifier == ids[i].Value:
			name = &res.UnmatchedCompanies[u].CompanyName
			u++
		default:
			continue
		}
		if items[i].has(itemNeedsName) {
			cos = append(cos, items[i].co)
			at = append(at, name)
		}
	}
	names := make([]string, len(cos))
	if missing := reg.heldNames(cos, names); len(missing) > 0 {
		acns := make([]string, len(missing))
		var read []int32
		var got []string
		for j, k := range missing {
			acns[j] = reg.acn(cos[k])
		}
		if c.s.stopBefore != nil {
			c.s.stopBefore("read-names")
		}
		fetched, err := c.s.registerNames(ctx, acns)
		if err != nil {
			return err
		}
		for j, k := range missing {
			names[k] = fetched[j]
			if fetched[j] != "" {
				read, got = append(read, cos[k]), append(got, fetched[j])
			}
		}
		reg.hold(read, got)
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

// lookupParts is the number of ranges lookupAll splits n into: one per
// processor, at most 256 (copyItem.arena), one when n is small.
func lookupParts(n int) int {
	parts := min(runtime.GOMAXPROCS(0), 256)
	if n < parallelFrom || parts < 2 {
		return 1
	}
	step := (n + parts - 1) / parts
	return (n + step - 1) / step
}

// lookupAll runs each over [0, n) split into lookupParts(n) ranges,
// numbered from 0, and waits for them all. The copy's maps are only read
// meanwhile (the caller holds the read lock).
func lookupAll(n int, each func(part, lo, hi int)) {
	parts := lookupParts(n)
	if parts == 1 {
		each(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + parts - 1) / parts
	for part, lo := 0, 0; lo < n; part, lo = part+1, lo+step {
		wg.Add(1)
		go func(part, lo, hi int) {
			defer wg.Done()
			each(part, lo, hi)
		}(part, lo, min(lo+step, n))
	}
	wg.Wait()
}

// expand is Store.expand answered from the copy, when the copy is current
// (done false otherwise: the caller reads Redis). The register, the
// ABNs of every ACN involved and which identifiers notices carry come
// from the copy; the rules are Store.expand's.
func (c *ScreenCopy) expand(ctx context.Context, ids []string) (exp expansion, done bool, err error) {
	if !c.keepReg {
		return exp, false, nil
	}
	regV, synced, err := c.sync(ctx)
	if err != nil {
		return exp, true, err
	}
	reg := c.reg.Load()
	if synced == nil || reg == nil || reg.v != regV {
		c.wake()
		return exp, false, nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := c.n
	if n != synced {
		return exp, false, nil
	}
	exp.regv = regV
	keys := make(map[string]struct{}, len(ids)*2)
	companies := make(map[string]struct{}, len(ids))
	addABNs := func(acn string) {
		keys[acn] = struct{}{}
		if co, ok := reg.company(acn); ok {
			for _, b := range reg.abnsOf(co) {
				keys[b] = struct{}{}
			}
		}
	}
	var buf []int64
	for _, v := range ids {
		keys[v] = struct{}{}
		known := false
		if len(v) == 9 {
			companies[v] = struct{}{}
			if co, ok := reg.company(v); ok {
				known = reg.isNamed(co)
			}
			addABNs(v)
		} else {
			acns := reg.acnsOf(v)
			if r := primaryACN(v, acns); r != "" {
				companies[r] = struct{}{}
				known = true
			} else {
				companies[v] = struct{}{}
				exp.ixABNs = append(exp.ixABNs, v)
			}
			for _, a := range acns {
				addABNs(a)
			}
		}
		if buf = n.post.get(v, buf[:0]); !known && len(buf) == 0 {
			exp.unresolved = append(exp.unresolved, v)
		}
	}
	slices.Sort(exp.ixABNs)
	exp.keys, exp.companies = sortBoth(keys, companies)
	return exp, true, nil
}

// wake asks the background loader to refresh the copy now (a no-op when
// it is already asked).
func (c *ScreenCopy) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// changeBatch is the most publish log entries one XRANGE reads.
const changeBatch = 1000

// sync reads the register generation and applies the publish log past the
// notice copy's position, in one round trip when the log has nothing new,
// and returns the copy it brought up to date: nil when there is no notice
// copy, or the log was trimmed past it (then the copy is dropped, to be
// reloaded).
func (c *ScreenCopy) sync(ctx context.Context) (regV string, synced *noticeCopy, err error) {
	s := c.s
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	c.mu.RLock()
	n := c.n
	c.mu.RUnlock()
	var last string
	if n != nil {
		last = n.last
	}
	keys := s.log.Keys()
	var (
		vCmd, trimCmd *redis.StringCmd
		xCmd          *redis.XMessageSliceCmd
	)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		vCmd = p.Get(ctx, s.key(regKey, "v"))
		if n != nil {
			trimCmd = p.Get(ctx, keys.Trimmed)
			xCmd = p.XRangeN(ctx, keys.Log, "("+last, "+", changeBatch)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", nil, s.fail("read the publish log", err)
	}
	regV = vCmd.Val()
	if n == nil {
		return regV, nil, nil
	}
	if t := trimCmd.Val(); t != "" && publog.IDLess(last, t) {
		// Entries past the copy may have been trimmed away: reload.
		c.dropBehind()
		return regV, nil, nil
	}
	page := publog.EntriesOf(xCmd.Val())
	var entries []publog.Entry
	for {
		entries = append(entries, page...)
		if len(page) < changeBatch {
			break
		}
		var gone bool
		if page, gone, err = s.log.Read(ctx, page[len(page)-1].ID, changeBatch); err != nil {
			return "", nil, err
		}
		if gone {
			c.dropBehind()
			return regV, nil, nil
		}
	}
	if len(entries) == 0 {
		return regV, n, nil
	}
	c.mu.Lock()
	for _, e := range entries {
		if seq, ok := summarySeq(e.Summary); ok {
			n.apply(seq, e.Summary)
		}
	}
	n.last = entries[len(entries)-1].ID
	c.mu.Unlock()
	return regV, n, nil
}

// dropBehind drops the notice copy, which found the publish log trimmed
// past its position, to be reloaded, and counts it (Loads).
func (c *ScreenCopy) dropBehind() {
	c.behind.Add(1)
	c.mu.Lock()
	c.n = nil
	c.mu.Unlock()
}

// summarySeq reads the notice_seq of a summary (its second field).
func summarySeq(sum string) (int64, bool) {
	_, rest, ok := strings.Cut(sum, "\x1f")
	if !ok {
		return 0, false
	}
	f, _, _ := strings.Cut(rest, "\x1f")
	seq, err := strconv.ParseInt(f, 10, 64)
	return seq, err == nil
}

// scanCount is HSCAN's COUNT when a register copy loads.
const scanCount = 10000

// loadNotices builds a new notice copy from the notice source and swaps
// it in at the publish log position read before the source is read; the
// next sync brings it to the head of the log before a screen uses it (a
// screen only uses the copy its own sync brought up to date). The source
// is read up to the seq published when the position was read, so a
// notice written but not yet published is left to its log entry; a
// notice published while the source is read is in the log past that
// position, and applying a seq's current summary again is harmless.
func (c *ScreenCopy) loadNotices(ctx context.Context) error {
	s := c.s
	head, err := s.log.Head(ctx)
	if err != nil {
		return err
	}
	through, err := s.log.Published(ctx)
	if err != nil {
		return err
	}
	fresh := newNoticeCopy()
	fresh.last = head
	err = s.source.NoticeSummaries(ctx, through, func(n *notice.Notice) error {
		fresh.put(n.Seq, n)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: load the screen copy's notices: %w", err)
	}
	c.syncMu.Lock()
	c.mu.Lock()
	c.n = fresh
	c.mu.Unlock()
	c.syncMu.Unlock()
	c.loads.Add(1)
	return nil
}

// loadRegister builds the copy of register generation v aside and swaps
// it in whole, when v is still the current generation: the ACNs of its
// ids strings (each read whole), its odd ACNs and its other ABNs (abn).
func (c *ScreenCopy) loadRegister(ctx context.Context, v string) error {
	s := c.s
	b := newRegBuilder()
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
		if err := hscan(ctx, s, s.key(regKey, v, "odd"), func(acn, named string) { b.entry(acn, named == "1") }); err != nil {
			return err
		}
		if err := hscan(ctx, s, s.key(regKey, v, "abn"), b.abn); err != nil {
			return err
		}
	}
	r := b.build(v)
	cur, err := s.rdb.Get(ctx, s.key(regKey, "v")).Result()
	if err != nil && err != redis.Nil {
		return s.fail("load the screen copy", err)
	}
	if cur != v {
		return nil // replaced meanwhile: the next refresh loads the new one
	}
	c.reg.Store(r)
	return nil
}

// hscan calls each for every field and value of a hash (a field may come
// twice).
func hscan(ctx context.Context, s *Store, key string, each func(field, value string)) error {
	var cursor uint64
	for {
		kv, next, err := s.rdb.HScan(ctx, key, cursor, "", scanCount).Result()
		if err != nil {
			return s.fail("load the screen copy", err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			each(kv[i], kv[i+1])
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
