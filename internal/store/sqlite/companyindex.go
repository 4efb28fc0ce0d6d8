package sqlite

import (
	"context"
	"database/sql"
	"encoding/base32"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// companyIndex answers, in memory, which companies the register and the
// notices hold, for the bulk screen and watch creation, and holds what the
// bulk screen reports of each notice, so that 50,000 identifiers are
// screened in milliseconds without SQL. It holds
//   - the register's ACNs (sorted uint32) with their ABNs, compactly: a
//     company's ABN is nearly always two digits followed by its ACN, kept as
//     those two digits (one byte); other ABNs go to small maps;
//   - the register's current name of each company that has notices, in one
//     string (names);
//   - the notices' postings: (key, seq) sorted by key, where key is the ABN
//     or the ACN a notice carries;
//   - per notice seq (noticeMeta): its publication order key and, as small
//     interned codes, published_date, notice_type, notice_code,
//     notice_purpose, appointment_type, state and status; and its id in 10
//     bytes (ids).
//
// Everything is held in pointer-free slices (and one string of names), so
// the garbage collector does not scan it. It takes about 5 bytes per
// register company, 40 per company with notices (its name) and 63 per
// notice: 114 MB for 4,000,000 register rows and 1,000,000 notices
// (BenchmarkCompanyIndexLoad reports it), loaded in about 10 s.
//
// Freshness: before each use the index compares, in one query, the register
// version (registerVersion), the highest notice_seq and the notice key
// version (meta notice_keys_version, bumped by triggers of migrations 0002
// and 0004 when a stored notice's identifiers, publication time or any field
// held here changes, or a notice is deleted). A new register reloads the
// register part; new notices are merged in; a changed notice reloads the
// notice part. Other processes (`noticesd ingest`) are seen the same way.
type companyIndex struct {
	mu   sync.Mutex // serialises refreshes; guards values
	snap atomic.Pointer[companySnap]
	// values interns the notices' field values. Snapshots share its table:
	// it is only appended to, and each snapshot sees its own prefix.
	values *interner
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
	names companyNames
	// busy has bit i set when register company acns[i] has notices (on
	// its ACN or one of its register ABNs): the other 80% are screened
	// without looking at the postings.
	busy bitset

	noticeVersion string
	maxSeq        int64
	byACN, byABN  postingList  // notices by the ACN, the ABN they carry
	notes         []noticeMeta // by seq; zero for a seq with no notice
	ids           []byte       // by seq, noticeIDBytes each: the id's payload
	oddIDs        map[int64]string
	// values is the interned values table notes' codes index; values[0]
	// stands for NULL.
	values []string
	// fields is false when notes lack their field codes (more distinct
	// values than codes); the screen then reads them with SQL.
	fields bool
}

// noticeMeta is what the bulk screen needs of one notice: its publication
// order key and its field values as codes into companySnap.values.
type noticeMeta struct {
	order                                                int64 // published_at in Unix ms (see noticeOrderKey)
	date, typ, code, purpose, appointment, state, status uint16
}

// Notice ids are "ntc_" and 16 base32 characters (notice.IDFor), held as
// their 10 bytes; others are kept whole in oddIDs.
const (
	noticeIDPrefix = "ntc_"
	noticeIDBytes  = 10
)

var noticeIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// appendNoticeID appends the id of a notice the snapshot holds to b.
func (c *companySnap) appendNoticeID(b []byte, seq int64) []byte {
	if id, ok := c.oddIDs[seq]; ok {
		return append(b, id...)
	}
	b = append(b, noticeIDPrefix...)
	n := len(b)
	b = append(b, "0123456789abcdef"...)
	noticeIDEncoding.Encode(b[n:], c.ids[seq*noticeIDBytes:(seq+1)*noticeIDBytes])
	return b
}

// packNoticeID stores id's payload in dst (noticeIDBytes long) when id has
// the standard form, reporting whether it did.
func packNoticeID(dst []byte, id []byte) bool {
	if len(id) != len(noticeIDPrefix)+16 || string(id[:len(noticeIDPrefix)]) != noticeIDPrefix {
		return false
	}
	n, err := noticeIDEncoding.Decode(dst, id[len(noticeIDPrefix):])
	if err != nil || n != noticeIDBytes {
		return false
	}
	var back [16]byte
	noticeIDEncoding.Encode(back[:], dst)
	return string(back[:]) == string(id[len(noticeIDPrefix):])
}

// interner numbers distinct strings with uint16 codes; 0 is NULL.
type interner struct {
	values []string
	codes  map[string]uint16
}

// maxInterned is the number of codes (a variable so tests can overflow it).
var maxInterned = 1 << 16

func newInterner() *interner {
	return &interner{values: []string{""}, codes: map[string]uint16{}}
}

// code returns b's code, adding it if new; ok is false when the codes are
// exhausted.
func (in *interner) code(b []byte) (uint16, bool) {
	if c, ok := in.codes[string(b)]; ok {
		return c, true
	}
	if len(in.values) >= maxInterned {
		return 0, false
	}
	c := uint16(len(in.values))
	s := string(b)
	in.values = append(in.values, s)
	in.codes[s] = c
	return c, true
}

// companyNames maps register ACNs to names, pointer-free: name i is
// text[ends[i-1]:ends[i]].
type companyNames struct {
	acns []uint32 // sorted
	dir  directory
	ends []uint32
	text string
}

// get returns acn's name.
func (n *companyNames) get(acn uint32) (string, bool) {
	i, ok := dirSearch(n.dir, n.acns, acn)
	if !ok {
		return "", false
	}
	start := uint32(0)
	if i > 0 {
		start = n.ends[i-1]
	}
	return n.text[start:n.ends[i]], true
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
	i, found := dirSearch(p.dir, p.keys, key)
	if !found {
		return nil
	}
	j := i + 1
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

// parseDigits parses an all-digit string of length n.
func parseDigits[S ~[]byte | ~string](b S, n int) (uint64, bool) {
	if len(b) != n {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(b); i++ {
		c := b[i]
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

// versionsQuery reads what tells whether a snapshot is current.
const versionsQuery = `SELECT
	coalesce((SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'register' AND name GLOB 'register_acn_*'), ''),
	coalesce((SELECT value FROM meta WHERE key = 'notice_keys_version'), ''),
	coalesce((SELECT max(seq) FROM notices), 0)`

// current returns an up-to-date snapshot, refreshing what changed.
func (ix *companyIndex) current(ctx context.Context, db *sql.DB) (*companySnap, error) {
	var regVersion, noticeVersion string
	var maxSeq int64
	if err := db.QueryRowContext(ctx, versionsQuery).Scan(&regVersion, &noticeVersion, &maxSeq); err != nil {
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
	if err := tx.QueryRowContext(ctx, versionsQuery).Scan(&next.regVersion, &next.noticeVersion, &next.maxSeq); err != nil {
		return nil, fmt.Errorf("sqlite: refresh the company index: %w", err)
	}
	// Notices first: the register load keeps the names of the companies
	// that have notices.
	merge := old != nil && old.noticeVersion == next.noticeVersion && old.maxSeq <= next.maxSeq && ix.values != nil
	base, values := old, ix.values // the notices to add to, their values
	if !merge {
		base, values = nil, newInterner()
	}
	freshACNs, freshABNs, err := next.addNotices(ctx, tx, base, values)
	if err != nil {
		return nil, err
	}
	sameRegister := old != nil && old.regVersion == next.regVersion && next.regVersion != ""
	if sameRegister {
		next.acns, next.acnDir, next.abnPrefix = old.acns, old.acnDir, old.abnPrefix
		next.moreABNs, next.moreACNs, next.names = old.moreABNs, old.moreACNs, old.names
	} else if err := next.loadRegister(ctx, tx); err != nil {
		return nil, err
	}
	if sameRegister && merge {
		next.busy = slices.Clone(old.busy)
		next.markBusy(freshACNs, freshABNs)
	} else {
		next.busy = make(bitset, len(next.acns)/64+1)
		next.markBusy(next.byACN.keys, next.byABN.keys)
	}
	ix.values = values
	ix.snap.Store(next)
	return next, nil
}

// markBusy marks in c.busy the register companies that notices carrying
// acns and abns belong to.
func (c *companySnap) markBusy(acns, abns []uint64) {
	for _, k := range acns {
		if i, ok := c.findACN(uint32(k)); ok {
			c.busy.add(int64(i))
		}
	}
	for _, k := range abns {
		acn := uint32(k % 1e9)
		if i, ok := c.findACN(acn); ok && c.abnPrefix[i] != noABN && uint64(c.abnPrefix[i]) == k/1e9 {
			c.busy.add(int64(i))
		}
		for _, acn := range c.moreACNs[k] {
			if i, ok := c.findACN(acn); ok {
				c.busy.add(int64(i))
			}
		}
	}
}

// loadRegister reads the register's (acn, abn) pairs, and the current
// names of the companies with notices (c's postings must be loaded).
func (c *companySnap) loadRegister(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, "SELECT acn, abn, company_name, current_name_indicator FROM register ORDER BY rowid")
	if err != nil {
		return fmt.Errorf("sqlite: load the register into the company index: %w", err)
	}
	defer rows.Close()
	type pair struct {
		acn uint32
		abn uint64
	}
	type name struct {
		text    string
		current bool
	}
	var pairs []pair
	names := map[uint32]name{}
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
		// The current name, else the first: as screenDetails' SQL.
		if have, ok := names[uint32(acn)]; ok && have.current {
			continue
		}
		if len(c.byACN.get(acn)) == 0 && (abn == 0 || len(c.byABN.get(abn)) == 0) {
			continue
		}
		isCurrent := len(curB) == 1 && (curB[0] == 'Y' || curB[0] == 'y')
		if _, have := names[uint32(acn)]; !have || isCurrent {
			names[uint32(acn)] = name{string(nameB), isCurrent}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: load the register into the company index: %w", err)
	}
	// A name not from a current row may be wrong: the rows skipped above
	// (their own ACN and ABN without notices) can hold the current row, or
	// an earlier first row, of a company reached through another row's
	// ABN. Those few are read again by ACN.
	for acn, n := range names {
		if n.current {
			continue
		}
		var text string
		err := tx.QueryRowContext(ctx, `SELECT company_name FROM register WHERE acn = ?
			ORDER BY current_name_indicator IN ('Y', 'y') DESC, rowid LIMIT 1`, acnString(acn)).Scan(&text)
		if err != nil {
			return fmt.Errorf("sqlite: read the name of company %s: %w", acnString(acn), err)
		}
		names[acn] = name{text: text}
	}
	c.names = companyNames{acns: slices.Sorted(maps.Keys(names))}
	c.names.ends = make([]uint32, len(c.names.acns))
	var text strings.Builder
	for i, acn := range c.names.acns {
		text.WriteString(names[acn].text)
		c.names.ends[i] = uint32(text.Len())
	}
	c.names.text = text.String()
	c.names.dir = newDirectory(c.names.acns)

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

// grow returns s with length n, sharing s's array when it has the room:
// the snapshots sharing it read only below their own length, and refreshes
// (serialised) write only above it.
func grow[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	g := make([]T, n, n+n/8+1024)
	copy(g, s)
	return g
}

// addNotices loads the notices after old's (all of them when old is nil),
// merges their postings with old's and records what the screen needs of
// each, interning field values in values. It returns the ACNs and the ABNs
// the loaded notices carry.
func (c *companySnap) addNotices(ctx context.Context, tx *sql.Tx, old *companySnap, values *interner) (acnKeys, abnKeys []uint64, err error) {
	var from int64
	c.fields = true
	if old != nil {
		from = old.maxSeq
		c.notes, c.ids, c.oddIDs, c.fields = old.notes, old.ids, old.oddIDs, old.fields
	}
	c.notes = grow(c.notes, int(c.maxSeq+1))
	c.ids = grow(c.ids, int(c.maxSeq+1)*noticeIDBytes)
	rows, err := tx.QueryContext(ctx, `SELECT seq, acn, abn, published_date, published_at, id,
		notice_type, notice_code, notice_purpose, appointment_type, state, status
		FROM notices WHERE seq > ? AND seq <= ?`, from, c.maxSeq)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: load notices into the company index: %w", err)
	}
	defer rows.Close()
	var acns, abns []posting
	clonedOdd := false
	var cols [7]sql.RawBytes // date, type, code, purpose, appointment, state, status
	for rows.Next() {
		var (
			seq               int64
			acn, abn, at, id  sql.RawBytes
			date, typ, code   = &cols[0], &cols[1], &cols[2]
			purp, appt, st, s = &cols[3], &cols[4], &cols[5], &cols[6]
		)
		if err := rows.Scan(&seq, &acn, &abn, date, &at, &id, typ, code, purp, appt, st, s); err != nil {
			return nil, nil, err
		}
		if v, ok := parseDigits(acn, 9); ok {
			acns = append(acns, posting{v, seq})
		}
		if v, ok := parseDigits(abn, 11); ok {
			abns = append(abns, posting{v, seq})
		}
		m := &c.notes[seq]
		*m = noticeMeta{order: noticeOrderKey(cols[0], at)}
		for i, p := range [7]*uint16{&m.date, &m.typ, &m.code, &m.purpose, &m.appointment, &m.state, &m.status} {
			if cols[i] == nil {
				continue // NULL: code 0
			}
			code, ok := values.code(cols[i])
			if !ok {
				c.fields = false
			}
			*p = code
		}
		if !packNoticeID(c.ids[seq*noticeIDBytes:(seq+1)*noticeIDBytes], id) {
			if !clonedOdd {
				c.oddIDs, clonedOdd = maps.Clone(c.oddIDs), true
				if c.oddIDs == nil {
					c.oddIDs = map[int64]string{}
				}
			}
			c.oddIDs[seq] = string(id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlite: load notices into the company index: %w", err)
	}
	c.values = values.values
	var oldACN, oldABN postingList
	if old != nil {
		oldACN, oldABN = old.byACN, old.byABN
	}
	c.byACN, c.byABN = oldACN.merged(sortPostings(acns)), oldABN.merged(sortPostings(abns))
	return postingKeys(acns), postingKeys(abns), nil
}

func postingKeys(ps []posting) []uint64 {
	keys := make([]uint64, len(ps))
	for i, p := range ps {
		keys[i] = p.key
	}
	return keys
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
func noticeOrderKey[S ~[]byte | ~string](date, at S) int64 {
	if t, err := time.Parse(time.RFC3339Nano, string(at)); err == nil {
		return t.UnixMilli()
	}
	if t, err := time.Parse(time.DateOnly, string(date)); err == nil {
		return t.UnixMilli()
	}
	return 0
}

// acnString formats a register ACN.
func acnString(acn uint32) string {
	var b [9]byte
	return string(appendACN(b[:0], acn))
}

// appendACN appends acn as 9 digits.
func appendACN(b []byte, acn uint32) []byte {
	n := len(b)
	b = append(b, "000000000"...)
	for i := n + 8; i >= n; i-- {
		b[i] = byte('0' + acn%10)
		acn /= 10
	}
	return b
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

// dirSearch is slices.BinarySearch(keys, k) narrowed by the directory.
func dirSearch[K uint32 | uint64](d directory, keys []K, k K) (int, bool) {
	b := uint64(k) >> d.shift
	if b+1 >= uint64(len(d.starts)) {
		return len(keys), false
	}
	lo, hi := int(d.starts[b]), int(d.starts[b+1])
	i, found := slices.BinarySearch(keys[lo:hi], k)
	return lo + i, found
}
