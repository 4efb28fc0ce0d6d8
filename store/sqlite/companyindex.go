package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// companyIndex answers, in memory, which companies the register and the
// notices hold, for the bulk screen and watch creation: 50,000 identifiers
// are classified in milliseconds, where one SQLite index probe each would
// take over 100 ms. It holds
//   - the register's ACNs (sorted uint32) with their ABNs, compactly: a
//     company's ABN is nearly always two digits followed by its ACN, kept as
//     those two digits (one byte); other ABNs go to small maps;
//   - the notices' postings: (key, seq) sorted by key, where key is the
//     ABN, or the ACN plus acnKeyOffset, and each notice's publication order
//     key indexed by seq.
//
// About 4 bytes per register company plus 24 per notice: some 35 MB for
// 4,000,000 register rows and 1,000,000 notices.
//
// Freshness: before each use the index compares, in one query, the register
// version (registerVersion), the highest notice_seq and the notice key
// version (meta notice_keys_version, bumped by triggers of migration 0002
// when a stored notice's acn, abn or publication time changes, or a notice
// is deleted). A new register reloads the register part; new notices are
// merged in; a changed notice reloads the notice part. Other processes
// (`noticesd ingest`) are seen the same way.
type companyIndex struct {
	mu   sync.Mutex // serialises refreshes
	snap atomic.Pointer[companySnap]
}

// noABN marks a register ACN without a prefix-form ABN.
const noABN = 255

type companySnap struct {
	regVersion string
	acns       []uint32            // sorted, distinct register ACNs
	acnDir     directory           // over acns
	abnPrefix  []uint8             // per acns[i]: ABN = prefix*10^9 + ACN, or noABN
	moreABNs   map[uint32][]uint64 // further ABNs of an ACN (not prefix form, or a second one)
	moreACNs   map[uint64][]uint32 // the reverse of moreABNs
	// names holds the register's current name of the companies that had
	// notices when the register was loaded (others are read from SQL).
	names map[uint32]string

	noticeVersion string
	maxSeq        int64
	byACN, byABN  postingList // notices by the ACN, the ABN they carry
	order         []int64     // order[seq]: publication time in ms (0 when unknown)
}

// postingList maps identifiers (as numbers) to the seqs of the notices
// carrying them.
type postingList struct {
	keys []uint64 // sorted
	seqs []int64  // seqs[i] carries keys[i]; ascending within a key
	dir  directory
}

// get returns the seqs of notices carrying key.
func (p *postingList) get(key uint64) []int64 {
	i, _ := dirSearch(p.dir, p.keys, key)
	j := i
	for j < len(p.keys) && p.keys[j] == key {
		j++
	}
	return p.seqs[i:j]
}

// merged returns p with fresh postings (sorted, all newer than p's) added.
func (p *postingList) merged(fresh []posting) postingList {
	if len(fresh) == 0 {
		return *p
	}
	n := len(p.keys) + len(fresh)
	out := postingList{keys: make([]uint64, 0, n), seqs: make([]int64, 0, n)}
	i, j := 0, 0
	for i < len(p.keys) || j < len(fresh) {
		if j == len(fresh) || (i < len(p.keys) && p.keys[i] <= fresh[j].key) {
			out.keys, out.seqs = append(out.keys, p.keys[i]), append(out.seqs, p.seqs[i])
			i++
		} else {
			out.keys, out.seqs = append(out.keys, fresh[j].key), append(out.seqs, fresh[j].seq)
			j++
		}
	}
	out.dir = newDirectory(out.keys)
	return out
}

// findACN returns the position of acn in the register, if there.
func (c *companySnap) findACN(acn uint32) (int, bool) {
	return dirSearch(c.acnDir, c.acns, acn)
}

// abnsOf returns the register ABNs of an ACN.
func (c *companySnap) abnsOf(acn uint32) []uint64 {
	var out []uint64
	if i, ok := c.findACN(acn); ok && c.abnPrefix[i] != noABN {
		out = append(out, uint64(c.abnPrefix[i])*1e9+uint64(acn))
	}
	return append(out, c.moreABNs[acn]...)
}

// acnsOf returns the register ACNs an ABN resolves to (normally one).
func (c *companySnap) acnsOf(abn uint64) []uint32 {
	var out []uint32
	acn := uint32(abn % 1e9)
	if i, ok := c.findACN(acn); ok && c.abnPrefix[i] != noABN && uint64(c.abnPrefix[i]) == abn/1e9 {
		out = append(out, acn)
	}
	return append(out, c.moreACNs[abn]...)
}

// orderOf returns a notice's publication order key.
func (c *companySnap) orderOf(seq int64) int64 {
	if seq >= 0 && seq < int64(len(c.order)) {
		return c.order[seq]
	}
	return 0
}

// parseDigits parses an all-digit string of length n.
func parseDigits(b []byte, n int) (uint64, bool) {
	if len(b) != n {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// WarmCompanyIndex loads the in-memory company index now rather than on
// the first bulk screen or watch creation, which otherwise pays for it (a
// few seconds on a 4,000,000-row register). Call it after Open in a server.
func (s *Store) WarmCompanyIndex(ctx context.Context) error {
	_, err := s.companies.current(ctx, s.read)
	return err
}

// current returns an up-to-date snapshot, refreshing what changed.
func (ix *companyIndex) current(ctx context.Context, db *sql.DB) (*companySnap, error) {
	var regVersion, noticeVersion string
	var maxSeq int64
	err := db.QueryRowContext(ctx, `SELECT
		coalesce((SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'register' AND name GLOB 'register_acn_*'), ''),
		coalesce((SELECT value FROM meta WHERE key = 'notice_keys_version'), ''),
		coalesce((SELECT max(seq) FROM notices), 0)`).Scan(&regVersion, &noticeVersion, &maxSeq)
	if err != nil {
		return nil, fmt.Errorf("sqlite: check the company index: %w", err)
	}
	fresh := func(c *companySnap) bool {
		return c != nil && regVersion != "" && c.regVersion == regVersion && c.noticeVersion == noticeVersion && c.maxSeq >= maxSeq
	}
	if c := ix.snap.Load(); fresh(c) {
		return c, nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	old := ix.snap.Load()
	if fresh(old) {
		return old, nil
	}
	// Read what changed in one read transaction, so the parts agree.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: refresh the company index: %w", err)
	}
	defer tx.Rollback()
	next := &companySnap{}
	if err := tx.QueryRowContext(ctx, `SELECT
		coalesce((SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'register' AND name GLOB 'register_acn_*'), ''),
		coalesce((SELECT value FROM meta WHERE key = 'notice_keys_version'), ''),
		coalesce((SELECT max(seq) FROM notices), 0)`).Scan(&next.regVersion, &next.noticeVersion, &next.maxSeq); err != nil {
		return nil, fmt.Errorf("sqlite: refresh the company index: %w", err)
	}
	// Notices first: the register load keeps the names of the companies
	// that have notices.
	if old != nil && old.noticeVersion == next.noticeVersion && old.maxSeq <= next.maxSeq {
		if err := next.addNotices(ctx, tx, old); err != nil {
			return nil, err
		}
	} else if err := next.addNotices(ctx, tx, nil); err != nil {
		return nil, err
	}
	if old != nil && old.regVersion == next.regVersion && next.regVersion != "" {
		next.acns, next.acnDir, next.abnPrefix = old.acns, old.acnDir, old.abnPrefix
		next.moreABNs, next.moreACNs, next.names = old.moreABNs, old.moreACNs, old.names
	} else if err := next.loadRegister(ctx, tx); err != nil {
		return nil, err
	}
	ix.snap.Store(next)
	return next, nil
}

// loadRegister reads the register's (acn, abn) pairs, and the current
// names of the companies with notices (c's postings must be loaded).
func (c *companySnap) loadRegister(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT acn, abn, company_name, current_name_indicator FROM register")
	if err != nil {
		return fmt.Errorf("sqlite: load the register into the company index: %w", err)
	}
	defer rows.Close()
	type pair struct {
		acn uint32
		abn uint64
	}
	var pairs []pair
	c.names = map[uint32]string{}
	current := map[uint32]bool{} // the name held is the current one
	for rows.Next() {
		var acnB, abnB, nameB, curB sql.RawBytes
		if err := rows.Scan(&acnB, &abnB, &nameB, &curB); err != nil {
			return err
		}
		acn, ok := parseDigits(acnB, 9)
		if !ok {
			continue // not an ACN; SQL lookups cannot match it either
		}
		abn, _ := parseDigits(abnB, 11)
		pairs = append(pairs, pair{uint32(acn), abn})
		if current[uint32(acn)] || (len(c.byACN.get(acn)) == 0 && (abn == 0 || len(c.byABN.get(abn)) == 0)) {
			continue
		}
		isCurrent := len(curB) == 1 && (curB[0] == 'Y' || curB[0] == 'y')
		if _, have := c.names[uint32(acn)]; !have || isCurrent {
			c.names[uint32(acn)] = string(nameB)
			current[uint32(acn)] = isCurrent
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: load the register into the company index: %w", err)
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if a.acn != b.acn {
			return cmpU(uint64(a.acn), uint64(b.acn))
		}
		return cmpU(a.abn, b.abn)
	})
	pairs = slices.Compact(pairs)
	c.acns = make([]uint32, 0, len(pairs))
	c.abnPrefix = make([]uint8, 0, len(pairs))
	c.moreABNs = map[uint32][]uint64{}
	c.moreACNs = map[uint64][]uint32{}
	for _, p := range pairs {
		n := len(c.acns)
		if n == 0 || c.acns[n-1] != p.acn {
			c.acns = append(c.acns, p.acn)
			c.abnPrefix = append(c.abnPrefix, noABN)
			n++
		}
		if p.abn == 0 {
			continue
		}
		if c.abnPrefix[n-1] == noABN && p.abn%1e9 == uint64(p.acn) {
			c.abnPrefix[n-1] = uint8(p.abn / 1e9)
			continue
		}
		c.moreABNs[p.acn] = append(c.moreABNs[p.acn], p.abn)
		c.moreACNs[p.abn] = append(c.moreACNs[p.abn], p.acn)
	}
	c.acnDir = newDirectory(c.acns)
	return nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type posting struct {
	key uint64
	seq int64
}

// addNotices loads the notices after old's (all of them when old is nil)
// and merges their postings with old's.
func (c *companySnap) addNotices(ctx context.Context, tx *sql.Tx, old *companySnap) error {
	var from int64
	if old != nil {
		from = old.maxSeq
		c.order = old.order
	}
	if int64(cap(c.order)) <= c.maxSeq {
		grown := make([]int64, len(c.order), c.maxSeq+c.maxSeq/8+1024)
		copy(grown, c.order)
		c.order = grown
	}
	c.order = c.order[:c.maxSeq+1]
	rows, err := tx.QueryContext(ctx, "SELECT seq, acn, abn, published_date, published_at FROM notices WHERE seq > ? AND seq <= ?", from, c.maxSeq)
	if err != nil {
		return fmt.Errorf("sqlite: load notices into the company index: %w", err)
	}
	defer rows.Close()
	var acns, abns []posting
	for rows.Next() {
		var (
			seq                int64
			acn, abn, date, at sql.RawBytes
		)
		if err := rows.Scan(&seq, &acn, &abn, &date, &at); err != nil {
			return err
		}
		if v, ok := parseDigits(acn, 9); ok {
			acns = append(acns, posting{v, seq})
		}
		if v, ok := parseDigits(abn, 11); ok {
			abns = append(abns, posting{v, seq})
		}
		c.order[seq] = noticeOrderKey(string(date), string(at))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: load notices into the company index: %w", err)
	}
	var oldACN, oldABN postingList
	if old != nil {
		oldACN, oldABN = old.byACN, old.byABN
	}
	c.byACN, c.byABN = oldACN.merged(sortPostings(acns)), oldABN.merged(sortPostings(abns))
	return nil
}

func sortPostings(ps []posting) []posting {
	slices.SortFunc(ps, func(a, b posting) int {
		if a.key != b.key {
			return cmpU(a.key, b.key)
		}
		return cmpU(uint64(a.seq), uint64(b.seq))
	})
	return ps
}

// noticeOrderKey is a notice's place in publication order: published_at
// in Unix milliseconds, or its published_date's midnight UTC when
// published_at does not parse. Ties are broken by seq by the caller.
func noticeOrderKey(date, at string) int64 {
	if t, err := time.Parse(time.RFC3339Nano, at); err == nil {
		return t.UnixMilli()
	}
	if t, err := time.Parse(time.DateOnly, date); err == nil {
		return t.UnixMilli()
	}
	return 0
}

// acnString formats a register ACN.
func acnString(acn uint32) string {
	s := strconv.FormatUint(uint64(acn), 10)
	for len(s) < 9 {
		s = "0" + s
	}
	return s
}

// directory speeds up searching a large sorted slice of roughly uniform
// keys: starts[b] is the first position whose key>>shift is at least b, so a
// search is a short binary search within one bucket (a few entries) instead
// of some 22 steps over megabytes, most of them cache misses.
type directory struct {
	shift  uint
	starts []uint32
}

func newDirectory[K uint32 | uint64](keys []K) directory {
	var d directory
	if len(keys) == 0 {
		return d
	}
	last := uint64(keys[len(keys)-1])
	// About four keys per bucket.
	for d.shift = 0; d.shift < 63 && last>>d.shift > uint64(len(keys)/4+1); d.shift++ {
	}
	buckets := last>>d.shift + 2
	d.starts = make([]uint32, buckets)
	b := uint64(0)
	for i, k := range keys {
		for ; b <= uint64(k)>>d.shift; b++ {
			d.starts[b] = uint32(i)
		}
	}
	for ; b < buckets; b++ {
		d.starts[b] = uint32(len(keys))
	}
	return d
}

// search is slices.BinarySearch(keys, k) narrowed by the directory.
func dirSearch[K uint32 | uint64](d directory, keys []K, k K) (int, bool) {
	b := uint64(k) >> d.shift
	if b+1 >= uint64(len(d.starts)) {
		return len(keys), false
	}
	lo, hi := int(d.starts[b]), int(d.starts[b+1])
	i, found := slices.BinarySearch(keys[lo:hi], k)
	return lo + i, found
}
