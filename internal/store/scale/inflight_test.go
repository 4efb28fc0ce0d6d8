package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/sample"
)

// TestIngestInFlightAsSerial: a notice load with several batches in
// flight (ingest.Options.InFlight, store.Turn) gives what a serial load
// gives: the same summary, the same notice_seq for every notice (in file
// order), the later version of a notice repeated in the next batch, a
// collected_at that never goes back as seqs go up, and the same Redis
// records (screened through them). The file has a notice repeated across
// each kind of batch boundary and a bad line.
func TestIngestInFlightAsSerial(t *testing.T) {
	ctx := context.Background()
	files, err := sample.WriteFiles(sample.Options{Notices: 300, Companies: 400, Seed: 3,
		Now: time.Date(2026, 11, 20, 6, 0, 0, 0, time.UTC)}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	lines := sampleLines(t, files.Notices)
	// Batches of 16: line 20 repeats line 10 (next batch), line 40 repeats
	// line 33 (same batch: the batcher flushes early), line 95 repeats
	// line 60 (two batches later); line 50 cannot be parsed.
	amend := func(i int) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatal(err)
		}
		m["text"] = "AMENDED " + m["text"].(string)
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, d := range []struct{ at, of int }{{95, 60}, {40, 33}, {20, 10}} {
		lines = append(lines[:d.at], append([]string{amend(d.of)}, lines[d.at:]...)...)
	}
	lines = append(lines[:50], append([]string{`{"source_id": broken`}, lines[50:]...)...)
	path := filepath.Join(t.TempDir(), "notices.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	type loaded struct {
		sum    ingest.Summary
		byID   map[string]notice.Notice
		screen string
	}
	load := func(inFlight int) loaded {
		st := openTest(t)
		rl, err := st.Writer().BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := rl.Rollback(); err != nil { // the register is not what this compares
			t.Fatal(err)
		}
		sum, err := ingest.Notices(ctx, st.Writer(), []string{path}, ingest.Options{BatchSize: 16, InFlight: inFlight})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		var idents []string
		for _, l := range lines {
			var n struct {
				SourceID string  `json:"source_id"`
				ACN      *string `json:"acn"`
				ABN      *string `json:"abn"`
			}
			if json.Unmarshal([]byte(l), &n) != nil {
				continue
			}
			ids = append(ids, notice.IDFor(n.SourceID))
			for _, v := range []*string{n.ACN, n.ABN} {
				if v != nil && *v != "" {
					idents = append(idents, *v)
				}
			}
		}
		ns, err := st.Elastic.NoticesByID(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		out := loaded{sum: sum, byID: map[string]notice.Notice{}}
		for _, n := range ns {
			out.byID[n.ID] = n
		}
		parsed := make([]ident.ID, 0, len(idents))
		for _, v := range idents {
			id, ok := ident.Normalise(v)
			if !ok {
				t.Fatalf("sample identifier %q does not parse", v)
			}
			parsed = append(parsed, id)
		}
		res, err := st.Redis.Screen(ctx, parsed, notice.Filter{IncludeDeregistration: true})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		out.screen = string(b)
		return out
	}
	serial, flying := load(1), load(3)

	serial.sum.Duration, flying.sum.Duration = 0, 0
	if serial.sum != flying.sum {
		t.Errorf("summary: serial %+v, in flight %+v", serial.sum, flying.sum)
	}
	if flying.sum.Updated != 3 || flying.sum.Rejected != 1 {
		t.Errorf("in flight: %d updated and %d rejected, want 3 and 1", flying.sum.Updated, flying.sum.Rejected)
	}
	if len(flying.byID) != len(serial.byID) || len(serial.byID) != 300 {
		t.Fatalf("stored %d in flight, %d serially, want 300", len(flying.byID), len(serial.byID))
	}
	var inOrder []notice.Notice
	for id, s := range serial.byID {
		f := flying.byID[id]
		if f.Seq != s.Seq {
			t.Errorf("%s: notice_seq %d in flight, %d serially", s.SourceID, f.Seq, s.Seq)
		}
		if f.Text != s.Text {
			t.Errorf("%s: text %.30q in flight, %.30q serially", s.SourceID, f.Text, s.Text)
		}
		inOrder = append(inOrder, f)
	}
	sort.Slice(inOrder, func(i, j int) bool { return inOrder[i].Seq < inOrder[j].Seq })
	for i := 1; i < len(inOrder); i++ {
		if inOrder[i].CollectedAt < inOrder[i-1].CollectedAt {
			t.Errorf("collected_at goes back: seq %d at %s after seq %d at %s", inOrder[i].Seq, inOrder[i].CollectedAt,
				inOrder[i-1].Seq, inOrder[i-1].CollectedAt)
		}
	}
	if !reflect.DeepEqual(serial.screen, flying.screen) {
		t.Errorf("the screen differs:\nserial    %.400s\nin flight %.400s", serial.screen, flying.screen)
	}
}

// sampleLines reads the lines of a (gzipped) JSON Lines sample file.
func sampleLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ingest.Decompress(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
