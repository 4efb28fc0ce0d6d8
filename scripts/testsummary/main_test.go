package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestSummary: passing tests stay quiet, a failing test's whole output is
// printed with its package's lines when the package ends (not interleaved
// with another package's), and a skipped test is recorded with its reason.
func TestSummary(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"a"}`,
		`{"Action":"start","Package":"b"}`,
		`{"Action":"run","Package":"a","Test":"TestOK"}`,
		`{"Action":"output","Package":"a","Test":"TestOK","Output":"=== RUN   TestOK\n"}`,
		`{"Action":"output","Package":"a","Test":"TestOK","Output":"    a_test.go:1: quiet\n"}`,
		`{"Action":"pass","Package":"a","Test":"TestOK"}`,
		`{"Action":"output","Package":"a","Test":"TestBad","Output":"=== RUN   TestBad\n"}`,
		`{"Action":"output","Package":"a","Test":"TestBad","Output":"    a_test.go:2: boom\n"}`,
		`{"Action":"output","Package":"a","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}`,
		`{"Action":"fail","Package":"a","Test":"TestBad"}`,
		`{"Action":"output","Package":"b","Test":"TestSkip","Output":"    b_test.go:3: LIVE SUITE NOT RUN: TestSkip needs redis\n"}`,
		`{"Action":"output","Package":"b","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}`,
		`{"Action":"skip","Package":"b","Test":"TestSkip"}`,
		`{"Action":"output","Package":"b","Output":"PASS\n"}`,
		`{"Action":"output","Package":"b","Output":"ok  \tb\t0.1s\n"}`,
		`{"Action":"pass","Package":"b","Elapsed":0.1}`,
		`{"Action":"output","Package":"a","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"a","Output":"FAIL\ta\t0.2s\n"}`,
		`{"Action":"fail","Package":"a","Elapsed":0.2}`,
	}, "\n") + "\n"
	var out, skips bytes.Buffer
	s := &summary{out: &out, skips: &skips, stage: "go test", buf: map[key][]string{}, pkgOut: map[string][]string{}, failed: map[string][]string{}}
	s.run(strings.NewReader(in))
	want := "ok  \tb\t0.1s\n    a_test.go:2: boom\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\ta\t0.2s\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	if want := "b\tTestSkip\tb_test.go:3: LIVE SUITE NOT RUN: TestSkip needs redis\tgo test\n"; skips.String() != want {
		t.Errorf("skips: %q, want %q", skips.String(), want)
	}
}
