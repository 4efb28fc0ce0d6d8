package redisstore

import (
	"cmp"
	"slices"
	"sort"
	"sync"
	"unsafe"
)

// regCopy is one register generation held in memory for the bulk screen:
// what its ids strings and the hashes reg:<v>:odd and reg:<v>:abn hold,
// compactly and without pointers for the bulk of it:
//
//   - acns: the register's 9-digit ACNs, sorted, as uint32; company i is
//     acns[i]. ACNs of another form are kept as strings in odd and
//     numbered after them;
//   - abnPrefix: per company, the two digits its ABN starts with when the
//     ABN is those two digits followed by the ACN (nearly every company),
//     or noABN; any other ABN, or a second one, is in moreABNs/moreACNs;
//   - named: one bit per company, set when it has a current name.
//
// Names are read from the notice source when a screen first needs them
// (ScreenCopy.fillNames) and held (nameIx, held): about 10 bytes a company
// plus the names of those with notices (BenchmarkScreenCopySize). Apart
// from the names held, a regCopy is never changed once built.
type regCopy struct {
	v         string // the generation (reg:v), "" for none loaded ever
	acns      []uint32
	acnDir    []uint32 // acnDir[b]: the first index of acns whose top bits (acn>>dirShift) are b or more
	odd       map[string]int32
	oddACNs   []string
	abnPrefix []uint8
	moreABNs  map[int32][]string
	moreACNs  map[string][]int32
	named     []uint64

	nameMu sync.RWMutex
	nameIx []uint32 // per company: 1 + its name's index in held, 0 for not held
	held   nameChunks
}

// nameChunks holds names back to back in append-only chunks (a string
// read from one stays valid after the lock is released), each found by
// one packed location: no string header or allocation per name.
type nameChunks struct {
	chunks [][]byte
	locs   []uint64 // chunk<<40 | offset<<18 | length
}

// maxHeldName is the longest name held (longer ones are read from the
// notice source each time).
const maxHeldName = 1<<18 - 1

// add appends a name (at most maxHeldName bytes) and returns its index.
func (h *nameChunks) add(name string) uint32 {
	chunk, off := appendChunk(&h.chunks, name)
	h.locs = append(h.locs, uint64(chunk)<<40|uint64(off)<<18|uint64(len(name)))
	return uint32(len(h.locs) - 1)
}

// get returns name i.
func (h *nameChunks) get(i uint32) string {
	l := h.locs[i]
	n := int(l & maxHeldName)
	if n == 0 {
		return ""
	}
	c := h.chunks[l>>40]
	return unsafe.String(&c[int(l>>18)&(chunkSize-1)], n)
}

// noABN marks a company without a prefix-form ABN.
const noABN = 255

// dirShift cuts a 9-digit ACN (below 2^30) to the 2^16 buckets of acnDir:
// a lookup binary-searches one bucket (about 60 ACNs of a national
// register) instead of the whole array.
const dirShift = 14

// buildDir returns the directory of sorted ACNs.
func buildDir(acns []uint32) []uint32 {
	dir := make([]uint32, 1<<(30-dirShift)+1)
	for b := range dir {
		i, _ := slices.BinarySearch(acns, uint32(b)<<dirShift)
		dir[b] = uint32(i)
	}
	return dir
}

// regBuilder builds a regCopy from a generation's ids strings and its
// hashes' entries, in any order and with repeats (HSCAN may return an
// entry twice), keeping the ABN pairs as numbers where it can.
type regBuilder struct {
	entries  []regEntry
	oddNames map[string]bool // ACNs not of 9 digits: whether each has a name
	prefixed []prefixPair    // ABN = two digits followed by its one ACN
	pairs    [][2]string     // every other (ABN, ACN)
}

type regEntry struct {
	acn   uint32
	named bool
}

type prefixPair struct {
	acn uint32
	p   uint8
}

func newRegBuilder() *regBuilder { return &regBuilder{oddNames: map[string]bool{}} }

// entry adds an ACN, named or not.
func (b *regBuilder) entry(acn string, named bool) {
	n, ok := nineDigits(acn)
	if !ok {
		b.oddNames[acn] = named
		return
	}
	b.entries = append(b.entries, regEntry{acn: n, named: named})
}

// idsPart adds the entries of ids string part (its bytes: 2 bits a slot,
// the first slot in the top bits of the first byte): each ACN named, and
// formed (its formed ABN).
func (b *regBuilder) idsPart(part uint32, bits []byte) {
	for i, c := range bits {
		if c == 0 {
			continue
		}
		for k := 0; k < 4; k++ {
			code := c >> (6 - 2*k) & 3
			if code == 0 {
				continue
			}
			acn := slotNumber(part*slotsPerPart + uint32(4*i+k))
			b.entries = append(b.entries, regEntry{acn: acn, named: code&2 != 0})
			if code&1 != 0 {
				b.prefixed = append(b.prefixed, prefixPair{acn: acn, p: formedPrefix(acn)})
			}
		}
	}
}

// abn adds an entry of reg:<v>:abn: an ABN and its comma-joined ACNs.
func (b *regBuilder) abn(abn, acns string) {
	if len(abn) == 11 && acns == abn[2:] && isDigit(abn[0]) && isDigit(abn[1]) {
		if n, ok := nineDigits(acns); ok {
			b.prefixed = append(b.prefixed, prefixPair{acn: n, p: (abn[0]-'0')*10 + abn[1] - '0'})
			return
		}
	}
	for _, a := range splitList(acns) {
		b.pairs = append(b.pairs, [2]string{abn, a})
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// nineDigits parses a 9-digit ACN.
func nineDigits(s string) (uint32, bool) {
	k, ok := idKey(s)
	return uint32(k >> 1), ok && len(s) == 9
}

// build returns the copy of generation v; the builder is spent.
func (b *regBuilder) build(v string) *regCopy {
	r := &regCopy{v: v, odd: map[string]int32{}, moreABNs: map[int32][]string{}, moreACNs: map[string][]int32{}}
	// An ACN only an ABN names is kept too, nameless, as Redis answers it.
	has := func(acn uint32) bool {
		_, ok := slices.BinarySearchFunc(b.entries, acn, func(e regEntry, t uint32) int { return cmp.Compare(e.acn, t) })
		return ok
	}
	sortEntries := func() {
		slices.SortFunc(b.entries, func(x, y regEntry) int { return cmp.Compare(x.acn, y.acn) })
		b.entries = slices.CompactFunc(b.entries, func(x, y regEntry) bool { return x.acn == y.acn })
	}
	sortEntries()
	var missing []regEntry
	for _, p := range b.prefixed {
		if !has(p.acn) {
			missing = append(missing, regEntry{acn: p.acn})
		}
	}
	for _, p := range b.pairs {
		if n, ok := nineDigits(p[1]); ok && !has(n) {
			missing = append(missing, regEntry{acn: n})
		} else if _, known := b.oddNames[p[1]]; !ok && !known {
			b.oddNames[p[1]] = false
		}
	}
	if len(missing) > 0 {
		b.entries = append(b.entries, missing...)
		sortEntries()
	}
	r.acns = make([]uint32, len(b.entries))
	for i, e := range b.entries {
		r.acns[i] = e.acn
	}
	r.acnDir = buildDir(r.acns)
	for a := range b.oddNames {
		r.oddACNs = append(r.oddACNs, a)
	}
	sort.Strings(r.oddACNs)
	for i, a := range r.oddACNs {
		r.odd[a] = int32(len(r.acns) + i)
	}
	companies := len(r.acns) + len(r.oddACNs)
	r.named = make([]uint64, (companies+63)/64)
	for i, e := range b.entries {
		if e.named {
			r.named[i/64] |= 1 << (i % 64)
		}
	}
	for i, a := range r.oddACNs {
		if j := len(r.acns) + i; b.oddNames[a] {
			r.named[j/64] |= 1 << (j % 64)
		}
	}
	r.abnPrefix = slices.Repeat([]uint8{noABN}, companies)
	for _, p := range b.prefixed {
		i, _ := slices.BinarySearch(r.acns, p.acn)
		if r.abnPrefix[i] == noABN || r.abnPrefix[i] == p.p {
			r.abnPrefix[i] = p.p
			continue
		}
		// Another prefix-form ABN of the same company.
		abn := r.prefixABN(int32(i), p.p)
		if slices.Contains(r.moreABNs[int32(i)], abn) {
			continue
		}
		r.moreABNs[int32(i)] = append(r.moreABNs[int32(i)], abn)
		r.moreACNs[abn] = append(r.moreACNs[abn], int32(i))
	}
	for _, p := range b.pairs {
		i, _ := r.company(p[1])
		if slices.Contains(r.moreACNs[p[0]], i) {
			continue // a repeated HSCAN entry
		}
		r.moreABNs[i] = append(r.moreABNs[i], p[0])
		r.moreACNs[p[0]] = append(r.moreACNs[p[0]], i)
	}
	*b = regBuilder{}
	return r
}

// company returns the index of a register ACN.
func (r *regCopy) company(acn string) (int32, bool) {
	if n, ok := nineDigits(acn); ok {
		b := n >> dirShift
		lo, hi := r.acnDir[b], r.acnDir[b+1]
		i, found := slices.BinarySearch(r.acns[lo:hi], n)
		return int32(lo) + int32(i), found
	}
	i, ok := r.odd[acn]
	return i, ok
}

// appendACN appends company i's ACN to b.
func (r *regCopy) appendACN(b []byte, i int32) []byte {
	if int(i) >= len(r.acns) {
		return append(b, r.oddACNs[int(i)-len(r.acns)]...)
	}
	for k, v := uint32(100_000_000), r.acns[i]; k > 0; k /= 10 {
		b = append(b, byte('0'+v/k%10))
	}
	return b
}

// acn returns company i's ACN.
func (r *regCopy) acn(i int32) string { return string(r.appendACN(nil, i)) }

// isNamed reports whether company i has a current name.
func (r *regCopy) isNamed(i int32) bool { return r.named[i/64]&(1<<(i%64)) != 0 }

// heldNames sets names[k] to the name held of company cos[k] and returns
// the positions k of the companies whose names are not held (all of them
// without a copy, r nil).
func (r *regCopy) heldNames(cos []int32, names []string) (missing []int) {
	if r == nil {
		for k := range cos {
			missing = append(missing, k)
		}
		return missing
	}
	r.nameMu.RLock()
	defer r.nameMu.RUnlock()
	for k, co := range cos {
		if r.nameIx != nil && r.nameIx[co] != 0 {
			names[k] = r.held.get(r.nameIx[co] - 1)
		} else {
			missing = append(missing, k)
		}
	}
	return missing
}

// hold keeps the names of companies cos (read from the notice source's
// register); without a copy (r nil) it does nothing.
func (r *regCopy) hold(cos []int32, names []string) {
	if r == nil {
		return
	}
	r.nameMu.Lock()
	defer r.nameMu.Unlock()
	if r.nameIx == nil {
		r.nameIx = make([]uint32, len(r.abnPrefix))
	}
	for k, co := range cos {
		if r.nameIx[co] == 0 && len(names[k]) <= maxHeldName {
			r.nameIx[co] = r.held.add(names[k]) + 1
		}
	}
}

// prefixABN returns the ABN made of the two digits p and company i's ACN.
func (r *regCopy) prefixABN(i int32, p uint8) string {
	return string(r.appendACN([]byte{'0' + p/10, '0' + p%10}, i))
}

// abnsOf returns the register ABNs of company i (reg:<v>:acnabn).
func (r *regCopy) abnsOf(i int32) []string {
	var out []string
	if p := r.abnPrefix[i]; p != noABN {
		out = append(out, r.prefixABN(i, p))
	}
	return append(out, r.moreABNs[i]...)
}

// prefixABNKey returns the postings key (idKey) of company i's
// prefix-form ABN, if it has one.
func (r *regCopy) prefixABNKey(i int32) (uint64, bool) {
	p := r.abnPrefix[i]
	if p == noABN || int(i) >= len(r.acns) {
		return 0, false
	}
	return (uint64(p)*1_000_000_000+uint64(r.acns[i]))<<1 | 1, true
}

// prefixCompany returns the company whose prefix-form ABN abn is, if
// any (its ACN is abn's last nine digits).
func (r *regCopy) prefixCompany(abn string) (int32, bool) {
	if len(abn) != 11 {
		return 0, false
	}
	i, ok := r.company(abn[2:])
	if !ok {
		return 0, false
	}
	p := r.abnPrefix[i]
	return i, p != noABN && abn[0] == '0'+p/10 && abn[1] == '0'+p%10
}

// appendACNsOf appends the register ACNs of an ABN to out.
func (r *regCopy) appendACNsOf(out []string, abn string) []string {
	if _, ok := r.prefixCompany(abn); ok {
		out = append(out, abn[2:])
	}
	for _, i := range r.moreACNs[abn] {
		out = append(out, r.acn(i))
	}
	return out
}
