package redisstore

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// regCopy is one register generation held in memory for the bulk screen,
// without pointers for the bulk of it (layout, and why names are read
// when first needed, by ScreenCopy.fillNames: docs/redis.md, "The
// replica's in-memory copy"). Apart from the names, it never changes.
type regCopy struct {
	v         string // the generation (reg:v), "" for none loaded ever
	acns      []uint32
	acnDir    []uint32 // acnDir[b]: the first index of acns whose top bits (acn>>dirShift) are b or more
	abnPrefix []uint8
	moreABNs  map[int32][]string
	moreACNs  map[string][]int32
	named     []uint64

	// The names held, back to back in append-only chunks (a string read
	// from one stays valid after the lock is released), each found by one
	// packed location: no string header or allocation per name.
	nameMu     sync.RWMutex
	nameIx     []uint32 // per company: 1 + its name's index in nameLocs, 0 for not held
	nameLocs   []uint64 // chunk<<40 | offset<<18 | length
	nameChunks [][]byte
}

// maxHeldName is the longest name held (longer ones are read from the
// notice source each time).
const maxHeldName = 1<<18 - 1

// noABN marks a company without a prefix-form ABN.
const noABN = 255

// dirShift cuts a 9-digit ACN (below 2^30) to the 2^16 buckets of acnDir:
// a lookup binary-searches one bucket (about 60 ACNs of a national
// register) instead of the whole array.
const dirShift = 14

// regBuilder builds a regCopy from a generation's ids strings and hash
// entries, in any order and with repeats (HSCAN may return an entry
// twice); bad is the first ACN not of nine digits, which the copy does
// not hold: the screen then reads that register from Redis.
type regBuilder struct {
	entries  []regEntry
	prefixed []prefixPair // of reg:<v>:abn: ABN = two digits followed by its ACN
	pairs    []abnPair    // every other (ABN, ACN)
	bad      string
}

type (
	regEntry struct {
		acn   uint32
		named bool
		p     uint8 // the two digits of its formed ABN, noABN for none
	}
	prefixPair struct {
		acn uint32
		p   uint8
	}
	abnPair struct {
		abn string
		acn uint32
	}
)

// nine parses a nine-digit ACN, noting one of another form in bad.
func (b *regBuilder) nine(acn string) (uint32, bool) {
	n, ok := nineDigits(acn)
	if !ok && b.bad == "" {
		b.bad = acn
	}
	return n, ok
}

// entry adds an ACN, named or not (a field of reg:<v>:odd).
func (b *regBuilder) entry(acn string, named bool) {
	if n, ok := b.nine(acn); ok {
		b.entries = append(b.entries, regEntry{acn: n, named: named, p: noABN})
	}
}

// idsPart adds the entries of ids string part (its bytes: 2 bits a slot,
// the first slot in the top bits of the first byte): each ACN named, and
// formed (its formed ABN).
func (b *regBuilder) idsPart(part uint32, bits []byte) {
	for i, c := range bits {
		for k := 0; c != 0 && k < 4; k++ {
			code := c >> (6 - 2*k) & 3
			if code == 0 {
				continue
			}
			e := regEntry{acn: slotNumber(part*slotsPerPart + uint32(4*i+k)), named: code&2 != 0, p: noABN}
			if code&1 != 0 {
				e.p = formedPrefix(e.acn)
			}
			b.entries = append(b.entries, e)
		}
	}
}

// abn adds an entry of reg:<v>:abn: an ABN and its comma-joined ACNs.
func (b *regBuilder) abn(abn, acns string) {
	for a, rest, more := "", acns, true; more; {
		a, rest, more = strings.Cut(rest, ",")
		n, ok := b.nine(a)
		switch {
		case !ok:
		case len(abn) == 11 && abn[2:] == a && isDigit(abn[0]) && isDigit(abn[1]):
			b.prefixed = append(b.prefixed, prefixPair{acn: n, p: (abn[0]-'0')*10 + abn[1] - '0'})
		default:
			b.pairs = append(b.pairs, abnPair{abn: abn, acn: n})
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func nineDigits(s string) (uint32, bool) {
	k, ok := idKey(s)
	return uint32(k >> 1), ok && len(s) == 9
}

// build returns the copy of generation v (nil when it holds a bad ACN);
// the builder is spent.
func (b *regBuilder) build(v string) *regCopy {
	if b.bad != "" {
		return nil
	}
	// An ACN only an ABN names is kept too, nameless, as Redis answers it:
	// each ABN's ACN is added so, sorted after the ACN's own entry, if any
	// (one with more said of it), and only the first entry of an ACN kept.
	for _, p := range b.prefixed {
		b.entries = append(b.entries, regEntry{acn: p.acn, p: noABN})
	}
	for _, p := range b.pairs {
		b.entries = append(b.entries, regEntry{acn: p.acn, p: noABN})
	}
	slices.SortFunc(b.entries, func(x, y regEntry) int {
		if x.acn != y.acn {
			return cmp.Compare(x.acn, y.acn)
		}
		return cmp.Or(cmp.Compare(x.p, y.p), cmp.Compare(boolArg(y.named), boolArg(x.named))) // named first
	})
	b.entries = slices.CompactFunc(b.entries, func(x, y regEntry) bool { return x.acn == y.acn })
	n := len(b.entries)
	r := &regCopy{v: v, acns: make([]uint32, n), acnDir: make([]uint32, 1<<(30-dirShift)+1), named: make([]uint64, (n+63)/64),
		abnPrefix: make([]uint8, n), moreABNs: map[int32][]string{}, moreACNs: map[string][]int32{}}
	for i, e := range b.entries {
		r.acns[i], r.abnPrefix[i] = e.acn, e.p
		if e.named {
			r.named[i/64] |= 1 << (i % 64)
		}
	}
	for d := range r.acnDir {
		i, _ := slices.BinarySearch(r.acns, uint32(d)<<dirShift)
		r.acnDir[d] = uint32(i)
	}
	for _, p := range b.prefixed {
		i, _ := slices.BinarySearch(r.acns, p.acn)
		if r.abnPrefix[i] == noABN || r.abnPrefix[i] == p.p {
			r.abnPrefix[i] = p.p
		} else { // another prefix-form ABN of the company
			r.pair(r.prefixABN(int32(i), p.p), int32(i))
		}
	}
	for _, p := range b.pairs {
		i, _ := slices.BinarySearch(r.acns, p.acn)
		r.pair(p.abn, int32(i))
	}
	*b = regBuilder{}
	return r
}

func (r *regCopy) pair(abn string, i int32) {
	if !slices.Contains(r.moreACNs[abn], i) {
		r.moreABNs[i] = append(r.moreABNs[i], abn)
		r.moreACNs[abn] = append(r.moreACNs[abn], i)
	}
}

// company returns the index of a register ACN.
func (r *regCopy) company(acn string) (int32, bool) {
	n, ok := nineDigits(acn)
	if !ok {
		return 0, false
	}
	lo, hi := r.acnDir[n>>dirShift], r.acnDir[n>>dirShift+1]
	i, found := slices.BinarySearch(r.acns[lo:hi], n)
	return int32(lo) + int32(i), found
}

func (r *regCopy) appendACN(b []byte, i int32) []byte {
	for k, v := uint32(100_000_000), r.acns[i]; k > 0; k /= 10 {
		b = append(b, byte('0'+v/k%10))
	}
	return b
}

func (r *regCopy) acn(i int32) string { return string(r.appendACN(nil, i)) }

func (r *regCopy) isNamed(i int32) bool { return r.named[i/64]&(1<<(i%64)) != 0 }

// names sets names[k] to the name of company cos[k]: the one held, else
// the one read (read is given the positions of those not held), which is
// then held unless empty. Without a copy (r nil) every name is read.
func (r *regCopy) names(cos []int32, names []string, read func(missing []int) ([]string, error)) error {
	var missing []int
	if r != nil {
		r.nameMu.RLock()
	}
	for k, co := range cos {
		if r != nil && r.nameIx != nil && r.nameIx[co] != 0 {
			l := r.nameLocs[r.nameIx[co]-1]
			names[k] = unsafe.String(&r.nameChunks[l>>40][int(l>>18)&(chunkSize-1)], int(l&maxHeldName))
		} else {
			if missing == nil {
				missing = make([]int, 0, len(cos)-k)
			}
			missing = append(missing, k)
		}
	}
	if r != nil {
		r.nameMu.RUnlock()
	}
	if len(missing) == 0 {
		return nil
	}
	got, err := read(missing)
	if err != nil {
		return err
	}
	if r != nil {
		r.nameMu.Lock()
		defer r.nameMu.Unlock()
		if r.nameIx == nil {
			r.nameIx = make([]uint32, len(r.acns))
		}
	}
	for j, k := range missing {
		if names[k] = got[j]; r != nil && r.nameIx[cos[k]] == 0 && names[k] != "" && len(names[k]) <= maxHeldName {
			chunk, off := appendChunk(&r.nameChunks, names[k])
			r.nameLocs = append(r.nameLocs, uint64(chunk)<<40|uint64(off)<<18|uint64(len(names[k])))
			r.nameIx[cos[k]] = uint32(len(r.nameLocs))
		}
	}
	return nil
}

// prefixABN returns the ABN made of the two digits p and company i's ACN.
func (r *regCopy) prefixABN(i int32, p uint8) string {
	return string(r.appendACN([]byte{'0' + p/10, '0' + p%10}, i))
}

// abnsOf returns the register ABNs of company i (reg:<v>:acnabn).
func (r *regCopy) abnsOf(i int32) []string {
	if p := r.abnPrefix[i]; p != noABN {
		return append([]string{r.prefixABN(i, p)}, r.moreABNs[i]...)
	}
	return r.moreABNs[i]
}

// prefixABNKey returns the postings key (idKey) of company i's
// prefix-form ABN, if it has one.
func (r *regCopy) prefixABNKey(i int32) (uint64, bool) {
	p := r.abnPrefix[i]
	return (uint64(p)*1_000_000_000+uint64(r.acns[i]))<<1 | 1, p != noABN
}

// prefixCompany returns the company whose prefix-form ABN abn is, if
// any (its ACN is abn's last nine digits).
func (r *regCopy) prefixCompany(abn string) (int32, bool) {
	if len(abn) == 11 {
		if i, ok := r.company(abn[2:]); ok {
			p := r.abnPrefix[i]
			return i, p != noABN && abn[0] == '0'+p/10 && abn[1] == '0'+p%10
		}
	}
	return 0, false
}

func (r *regCopy) appendACNsOf(out []string, abn string) []string {
	if _, ok := r.prefixCompany(abn); ok {
		out = append(out, abn[2:])
	}
	for _, i := range r.moreACNs[abn] {
		out = append(out, r.acn(i))
	}
	return out
}
