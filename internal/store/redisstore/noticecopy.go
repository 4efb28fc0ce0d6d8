package redisstore

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// apply applies publish log entries, in order, and moves the copy's
// position past them. An entry's summary is its notice's as published
// (publog.EncodeSummary); an unreadable one removes its seq.
func (n *summarySlab) apply(entries []publog.Entry) {
	for _, e := range entries {
		var dec notice.Notice
		var ptrs [3]string
		if err := publog.DecodeSummaryInto(e.Summary, &dec, &ptrs); err == nil {
			n.put(dec.Seq, &dec)
		} else if seq, ok := summarySeq(e.Summary); ok {
			n.remove(seq)
		}
		n.last = e.ID
	}
}

// summarySeq reads the notice_seq of a summary (its second field).
func summarySeq(sum string) (int64, bool) {
	_, rest, ok := strings.Cut(sum, "\x1f")
	f, _, _ := strings.Cut(rest, "\x1f")
	seq, err := strconv.ParseInt(f, 10, 64)
	return seq, ok && err == nil
}

// postings maps an identifier value to the seqs carrying it (docs/redis.md,
// "The notices"): 9- and 11-digit values only, as number keys (idKey). A
// key's value is the one seq carrying it (nearly all), or -(i+1) for
// lists[i] when two or more do. seen has one bit per hash of every key
// added, cleared only when rebuilt from the map: a clear bit means no seqs.
type postings struct {
	ids   map[uint64]int64
	seen  []uint64  // a power of two of bits, at least 2 per key added
	added int       // keys added to seen since it was built
	lists [][]int64 // sorted seqs of values with two or more
	free  []int64   // unused lists, as ids holds them: -(i+1) for lists[i]
}

// idKey packs a 9- or 11-digit value into a number, keeping its length.
func idKey(v string) (uint64, bool) {
	if len(v) != 9 && len(v) != 11 {
		return 0, false
	}
	var k uint64
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return 0, false
		}
		k = k*10 + uint64(v[i]-'0')
	}
	return k<<1 | uint64(len(v)-9)/2, true
}

func (p *postings) add(v string, seq int64) {
	k, ok := idKey(v)
	if !ok {
		return
	}
	if p.ids == nil {
		p.ids = map[uint64]int64{}
	}
	x, ok := p.ids[k]
	switch {
	case !ok:
		p.ids[k] = seq
		p.see(k)
	case x < 0:
		if i, found := slices.BinarySearch(p.lists[-x-1], seq); !found {
			p.lists[-x-1] = slices.Insert(p.lists[-x-1], i, seq)
		}
	case x != seq:
		l := []int64{min(x, seq), max(x, seq)}
		if n := len(p.free); n > 0 {
			p.ids[k], p.free = p.free[n-1], p.free[:n-1]
			p.lists[-p.ids[k]-1] = l
		} else {
			p.lists = append(p.lists, l)
			p.ids[k] = -int64(len(p.lists))
		}
	}
}

func (p *postings) remove(v string, seq int64) {
	k, ok := idKey(v)
	x, found := p.ids[k]
	switch {
	case !ok || !found:
	case x < 0:
		i := -x - 1
		l := p.lists[i]
		if j, found := slices.BinarySearch(l, seq); found {
			l = slices.Delete(l, j, j+1)
		}
		if len(l) > 1 {
			p.lists[i] = l
			return
		}
		p.lists[i] = nil
		p.free = append(p.free, x)
		if len(l) == 1 {
			p.ids[k] = l[0]
		} else {
			delete(p.ids, k)
		}
	case x == seq:
		delete(p.ids, k)
	}
}

func (p *postings) get(v string, buf []int64) []int64 {
	if k, ok := idKey(v); ok {
		return p.getKey(k, buf)
	}
	return buf
}

func (p *postings) seenBit(k uint64) (int, uint64) {
	h := (k * 0x9E3779B97F4A7C15) >> (64 - bits.TrailingZeros(uint(len(p.seen)*64)))
	return int(h / 64), 1 << (h % 64)
}

// see sets key k's bit of seen, first rebuilding seen from the map (with
// 4 bits or more per key: about a fifth of the keys absent find their bit
// set) when it holds fewer than 2 per key added.
func (p *postings) see(k uint64) {
	if p.added++; p.added*2 > len(p.seen)*64 {
		p.seen, p.added = make([]uint64, 1<<bits.Len(uint(max(1024, 4*len(p.ids))-1))/64), len(p.ids)
		for q := range p.ids {
			w, b := p.seenBit(q)
			p.seen[w] |= b
		}
		return
	}
	w, b := p.seenBit(k)
	p.seen[w] |= b
}

// getKey appends the seqs carrying the value of key k (idKey) to buf.
func (p *postings) getKey(k uint64, buf []int64) []int64 {
	if w, b := p.seenBit(k); len(p.seen) == 0 || p.seen[w]&b == 0 {
		return buf
	}
	x, ok := p.ids[k]
	switch {
	case !ok:
		return buf
	case x < 0:
		return append(buf, p.lists[-x-1]...)
	}
	return append(buf, x)
}

func sortedSet(seqs []int64) []int64 {
	slices.Sort(seqs)
	return slices.Compact(seqs)
}
