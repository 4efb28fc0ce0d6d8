package redisstore

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// summaryOf is a notice as the screen sees it: its summary (encodeSummary)
// decoded.
func summaryOf(t *testing.T, n notice.Notice) notice.Notice {
	t.Helper()
	var out notice.Notice
	var ptrs [3]string
	if err := publog.DecodeSummaryInto(publog.EncodeSummary(&n), &out, &ptrs); err != nil {
		t.Fatal(err)
	}
	return out
}

// slabHas checks that the slab decodes seq as the text encoding does and
// indexes it by its identifiers.
func slabHas(t *testing.T, s *summarySlab, seq int64, want notice.Notice) {
	t.Helper()
	var got notice.Notice
	var ptrs [3]string
	if !s.decode(seq, &got, &ptrs) {
		t.Fatalf("seq %d: no summary", seq)
	}
	if w := summaryOf(t, want); !reflect.DeepEqual(got, w) {
		t.Fatalf("seq %d decoded as\n%+v\nwant\n%+v", seq, got, w)
	}
	if at := read(s.chunks, s.where(seq)).str[1]; at != got.PublishedAt {
		t.Fatalf("seq %d: published instant %q, want %q", seq, at, got.PublishedAt)
	}
	for _, v := range publog.Idents(&got) {
		if v != "" && !slices.Contains(s.post.get(v, nil), seq) {
			t.Fatalf("seq %d: not among the seqs of its identifier %s", seq, v)
		}
	}
}

// slabCount is the number of summaries s holds.
func slabCount(s *summarySlab) int {
	n := 0
	for _, l := range s.dense {
		if l != 0 {
			n++
		}
	}
	return n
}

// TestSummarySlab: summaries put in the slab decode as their text
// encoding does (appointment type, acn and abn present or not, an empty
// appointment type kept apart from none), through replacement, removal,
// seqs that grow the dense range, and compactions, which leave strings decoded earlier intact.
func TestSummarySlab(t *testing.T) {
	tmpl := storetest.Notices(t)
	var s summarySlab
	put := func(seq int64, n notice.Notice) notice.Notice {
		n.Seq = seq
		s.put(seq, &n)
		return n
	}
	variant := func(i int) notice.Notice {
		n := tmpl[i%len(tmpl)]
		n.ID = fmt.Sprintf("id-%d", i)
		a := fmt.Sprintf("%09d", i)
		switch i % 4 {
		case 0:
			n.ACN, n.ABN, n.AppointmentType = &a, nil, nil
		case 1:
			b := "51" + a
			n.ACN, n.ABN = nil, &b
		case 2:
			empty := ""
			n.AppointmentType = &empty
		}
		return n
	}
	want := map[int64]notice.Notice{}
	for i, seq := range []int64{1, 2, 3, 100, 500_000, 7} {
		want[seq] = put(seq, variant(i))
	}
	for _, seq := range []int64{60_000, 180_000, 420_000, 800_000} {
		want[seq] = put(seq, variant(int(seq)))
	}
	for seq, n := range want {
		slabHas(t, &s, seq, n)
	}
	// Replaced and removed.
	want[2] = put(2, variant(9))
	s.remove(3)
	delete(want, 3)
	var none notice.Notice
	var ptrs [3]string
	if s.decode(3, &none, &ptrs) {
		t.Fatal("a removed seq decoded")
	}
	s.remove(3) // removed again: nothing
	if n := slabCount(&s); n != len(want) {
		t.Fatalf("count %d, want %d", n, len(want))
	}
	// A string decoded now must survive the compactions that enough
	// replacements cause.
	var held notice.Notice
	if !s.decode(1, &held, &ptrs) {
		t.Fatal("seq 1 missing")
	}
	heldID, heldName := held.ID, held.CompanyName
	wantID, wantName := want[1].ID, want[1].CompanyName
	chunksBefore := &s.chunks[0][0]
	for i := 0; i < 100_000; i++ {
		want[1] = put(1, variant(i))
	}
	if &s.chunks[0][0] == chunksBefore {
		t.Fatal("100,000 replacements did not compact the chunks")
	}
	if s.dead > s.live+chunkSize {
		t.Fatalf("dead %d bytes beside %d live after compaction", s.dead, s.live)
	}
	if heldID != wantID || heldName != wantName {
		t.Fatalf("a string decoded before compaction changed: %q %q, want %q %q", heldID, heldName, wantID, wantName)
	}
	for seq, n := range want {
		slabHas(t, &s, seq, n)
		s.remove(seq)
		for _, v := range publog.Idents(&n) {
			if got := s.post.get(v, nil); slices.Contains(got, seq) {
				t.Fatalf("seq %d removed: its identifier %s still has seqs %v", seq, v, got)
			}
		}
	}
	if n := slabCount(&s); n != 0 {
		t.Fatalf("%d summaries left after removing every one", n)
	}
}
