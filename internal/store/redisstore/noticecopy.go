package redisstore

import (
	"slices"
	"strings"
)

// noticeCopy is a replica's copy of nsum (seq -> encoded summary) with the
// index nidx derives from it: which seqs carry each ACN or ABN value. The
// index is kept as a function of the summaries (apply removes a seq from
// the values of its old summary and adds it to those of the new), so
// applying a seq's current summary again, in any order, leaves it exact.
type noticeCopy struct {
	sums map[int64]string
	post postings
	last int64 // the last change log entry applied (nlog:n)
}

func newNoticeCopy() *noticeCopy {
	return &noticeCopy{sums: map[int64]string{}, post: postings{
		one: map[uint64]int64{}, many: map[uint64][]int64{}, odd: map[string][]int64{}}}
}

// apply sets seq's summary ("" removes it).
func (n *noticeCopy) apply(seq int64, sum string) {
	if old, ok := n.sums[seq]; ok {
		for _, v := range summaryIdents(old) {
			if v != "" {
				n.post.remove(v, seq)
			}
		}
		delete(n.sums, seq)
	}
	if sum == "" {
		return
	}
	for _, v := range summaryIdents(sum) {
		if v != "" {
			n.post.add(v, seq)
		}
	}
	n.sums[seq] = sum
}

// summaryIdents returns the acn and abn fields of an encoded summary
// (encodeSummary: the 11th and 12th).
func summaryIdents(sum string) [2]string {
	var out [2]string
	for f := 0; f < 12; f++ {
		i := strings.Index(sum, sep)
		if i < 0 {
			return [2]string{}
		}
		if f >= 10 {
			out[f-10] = sum[:i]
		}
		sum = sum[i+len(sep):]
	}
	return out
}

// postings maps an identifier value to the seqs carrying it. A 9- or
// 11-digit value (every ACN and ABN the screen is asked) is a number key;
// a value holding one seq (nearly all) costs one map slot without
// pointers.
type postings struct {
	one  map[uint64]int64
	many map[uint64][]int64 // values with two or more seqs, sorted
	odd  map[string][]int64 // values of any other form, sorted
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
	k <<= 1
	if len(v) == 11 {
		k |= 1
	}
	return k, true
}

func (p *postings) add(v string, seq int64) {
	k, ok := idKey(v)
	if !ok {
		p.odd[v] = insertSeq(p.odd[v], seq)
		return
	}
	if l, ok := p.many[k]; ok {
		p.many[k] = insertSeq(l, seq)
	} else if q, ok := p.one[k]; ok && q != seq {
		delete(p.one, k)
		p.many[k] = insertSeq([]int64{q}, seq)
	} else {
		p.one[k] = seq
	}
}

func (p *postings) remove(v string, seq int64) {
	k, ok := idKey(v)
	if !ok {
		if l := deleteSeq(p.odd[v], seq); len(l) > 0 {
			p.odd[v] = l
		} else {
			delete(p.odd, v)
		}
		return
	}
	if l, ok := p.many[k]; ok {
		l = deleteSeq(l, seq)
		if len(l) == 1 {
			delete(p.many, k)
			p.one[k] = l[0]
		} else {
			p.many[k] = l
		}
	} else if p.one[k] == seq {
		delete(p.one, k)
	}
}

// get appends the seqs carrying v to buf.
func (p *postings) get(v string, buf []int64) []int64 {
	k, ok := idKey(v)
	if !ok {
		return append(buf, p.odd[v]...)
	}
	if q, ok := p.one[k]; ok {
		return append(buf, q)
	}
	return append(buf, p.many[k]...)
}

func insertSeq(l []int64, seq int64) []int64 {
	i, found := slices.BinarySearch(l, seq)
	if found {
		return l
	}
	return slices.Insert(l, i, seq)
}

func deleteSeq(l []int64, seq int64) []int64 {
	i, found := slices.BinarySearch(l, seq)
	if !found {
		return l
	}
	return slices.Delete(l, i, i+1)
}

// sortedSet sorts seqs and drops repeats.
func sortedSet(seqs []int64) []int64 {
	slices.Sort(seqs)
	return slices.Compact(seqs)
}
