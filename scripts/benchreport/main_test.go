package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocument: the document is the last run only: the intro (where the
// history is), the machine, the results and how to reproduce them, without
// the raw output (docs/benchmarks.txt has it); writing it replaces the file
// whole, so nothing of an earlier run or a hand-written section survives.
func TestDocument(t *testing.T) {
	raw := "goos: linux\npkg: github.com/noticesd/noticesd/matcher\nBenchmarkMatchOneNotice-2 \t 5000\t 43792 ns/op\t 43792 p50-ns\n"
	results, _ := parse(strings.NewReader(raw))
	var b strings.Builder
	write(&b, results, map[string]target{}, "", "20,000 notices", "- Embedded part: 1.0 min", "")
	doc := b.String()
	for _, want := range []string{"# Benchmarks\n", "git show " + History + ":docs/benchmarks.md", "### Machine", "- Embedded part: 1.0 min",
		"### Dataset", "| matcher `BenchmarkMatchOneNotice` | 43792 p50-ns |", "## How to reproduce", "make bench", "benchstat"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "Raw output") || strings.Contains(doc, "goos: linux") {
		t.Errorf("the document holds the raw output:\n%s", doc)
	}
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(path, []byte("# Benchmarks\n\n## Measured by hand (2026-11-23)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeDoc(path, []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != doc {
		t.Fatalf("the file holds\n%s\nwant the document alone", got)
	}
}

// TestSideBySideJudgesMeasuredRatio: the side-by-side table shows and
// judges a latency row's ratio as the benchmark measured it (x-raw), so a
// ratio just over its target is missed there as in the table of all
// results, not rounded to the target and met.
func TestSideBySideJudgesMeasuredRatio(t *testing.T) {
	dir := t.TempDir()
	rows := filepath.Join(dir, "rows.tsv")
	if err := os.WriteFile(rows, []byte("company view\tlatency\t-\tapi BenchmarkScale/Company\t-\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ xraw, want string }{
		{"1.302", "| 1.302 | <= 1.3x raw p50 | **missed** |"},
		{"1.298", "| 1.298 | <= 1.3x raw p50 | met |"},
	} {
		t.Run(c.xraw, func(t *testing.T) {
			out := "pkg: github.com/noticesd/noticesd/api\nBenchmarkScale/Company-2 \t 1\t 1 ns/op\t 1.756 p50-ms\t 7.454 p99-ms\t 1.348 raw-p50-ms\t 6.313 raw-p99-ms\t " + c.xraw + " x-raw\n"
			results, _ := parse(strings.NewReader(out))
			tg := map[string]target{"BenchmarkScale/Company\tx-raw": {text: "<= 1.3x raw p50", atMost: true, value: 1.3}}
			var b strings.Builder
			sideBySide(&b, results, tg, rows)
			if !strings.Contains(b.String(), c.want) {
				t.Errorf("table:\n%s\nwant a row ending %q", b.String(), c.want)
			}
		})
	}
}

// TestDocumentWithinMaxLines writes the document from the last make bench
// run's raw output (docs/benchmarks.txt) with the targets, rows and notes
// make bench uses, and a run description as long as bench.sh's: it must
// stay within MaxLines, and judge a target in the table of all results.
func TestDocumentWithinMaxLines(t *testing.T) {
	raw, err := os.Open("../../docs/benchmarks.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	results, _ := parse(raw)
	if len(results) < 40 {
		t.Fatalf("docs/benchmarks.txt has %d benchmark lines; want a whole make bench run", len(results))
	}
	run := strings.Repeat("- a line of bench.sh's run description\n", 8)
	var b strings.Builder
	write(&b, results, readTargets("../bench-targets.tsv"), "../bench-rows.tsv", "1000000 notices and 4000000 register rows", run, "../bench-notes.md")
	doc := b.String()
	if n := strings.Count(doc, "\n"); n > MaxLines {
		t.Errorf("the document has %d lines, over %d", n, MaxLines)
	}
	if !strings.Contains(doc, "| internal/store/sqlite `BenchmarkIngestRegister` | 142020 rows/s | rows/s >= 100,000 rows/s: met |") {
		t.Errorf("the table of all results lacks the register ingest row with its verdict:\n%s", doc)
	}
}

// TestPreviousRunKept: a run of one part (BENCH_PARTS=scale) keeps the
// other part's figures from the previous raw output, in the document and
// in the merged raw output, and a benchmark it ran again shows this run's
// figure only.
func TestPreviousRunKept(t *testing.T) {
	prev := filepath.Join(t.TempDir(), "benchmarks.txt")
	old := "pkg: github.com/noticesd/noticesd/internal/store/sqlite\n" +
		"BenchmarkCompany-2 \t 1\t 1 ns/op\t 0.2070 p50-ms\t 0.7650 p99-ms\n" +
		"pkg: github.com/noticesd/noticesd/api\n" +
		"BenchmarkScale/Company-2 \t 1\t 1 ns/op\t 3.663 p50-ms\t 17.54 p99-ms\t 3.201 raw-p50-ms\t 15.44 raw-p99-ms\t 1.144 x-raw\n" +
		"pkg: github.com/noticesd/noticesd/internal/store/elastic\n" +
		"BenchmarkESIngestNoticesRaw-2 \t 1\t 1 ns/op\t 14976 rows/s\n"
	if err := os.WriteFile(prev, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	now := "pkg: github.com/noticesd/noticesd/api\n" +
		"BenchmarkScale/Company-2 \t 1\t 1 ns/op\t 2.500 p50-ms\t 9.000 p99-ms\t 2.400 raw-p50-ms\t 8.000 raw-p99-ms\t 1.042 x-raw\n" +
		"BenchmarkScale/IngestNotices-2 \t 1\t 1 ns/op\t 1843 rows/s\n"
	results, raw := parse(strings.NewReader(now))
	results, raw, kept, err := withPrevious(results, raw, prev)
	if err != nil {
		t.Fatal(err)
	}
	if kept != 2 {
		t.Errorf("kept %d benchmarks, want 2 (the embedded one and the bare ingest loop)", kept)
	}
	rows := filepath.Join(t.TempDir(), "rows.tsv")
	if err := os.WriteFile(rows, []byte("company view\tlatency\tinternal/store/sqlite BenchmarkCompany\tapi BenchmarkScale/Company\t-\n"+
		"notice ingest\trows/s\t-\tapi BenchmarkScale/IngestNotices\tinternal/store/elastic BenchmarkESIngestNoticesRaw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	write(&b, results, map[string]target{}, rows, "", "", "")
	doc := b.String()
	for _, want := range []string{"| company view | 0.2070 (prev) | 0.7650 (prev) | 2.500 | 9.000 | 2.400 | 8.000 | 1.042 |",
		// No ratio between this run's figure and the previous run's.
		"| notice ingest |  |  | 1843 rows/s |  | 14976 rows/s (prev) |  |  |", "(prev): the previous run's figure",
		"| internal/store/sqlite `BenchmarkCompany` | 0.2070 p50-ms, 0.7650 p99-ms |"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the document lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "3.663") {
		t.Errorf("the document holds the previous run's figure of a benchmark run again:\n%s", doc)
	}
	again, _ := parse(strings.NewReader(raw))
	if len(again) != 4 || again[0].name != "BenchmarkCompany" || again[2].metrics["p50-ms"] != "2.500" {
		t.Errorf("merged raw output:\n%s\nwant the embedded benchmark, then this run's", raw)
	}
}
