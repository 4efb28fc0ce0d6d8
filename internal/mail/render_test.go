package mail

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtures are the emails docs/email.md shows: a deactivation alert and a
// digest over the cap.
func fixtures() map[string]Job {
	window := time.Date(2026, 11, 24, 7, 0, 0, 0, mustZone("Australia/Sydney"))
	d := Digest{WatchName: "Loan book", Window: window.UTC().Format(time.RFC3339Nano), FromSeq: 1200, ThroughSeq: 1262, Total: 53}
	companies := []string{"ALPHA MINING PTY LTD", "BRIGHT HARBOUR LOGISTICS PTY LTD", "CEDAR & STONE BUILDERS PTY. LIMITED"}
	types := []string{"Appointment of liquidator", "Notice of meeting of creditors", "Appointment of administrator"}
	for i := 0; i < DigestCap; i++ {
		d.Items = append(d.Items, Item{Seq: int64(1201 + i), NoticeID: fmt.Sprintf("ntc_%04d", i), Company: companies[i%3],
			ACN: fmt.Sprintf("%09d", 4085616+i*1000), NoticeType: types[i%3], PublishedDate: "2026-11-23",
			SourceURL: fmt.Sprintf("https://publishednotices.asic.gov.au/browsesearch-notices/notice-details/%d", 800100+i)})
	}
	return map[string]Job{
		"deactivated": {ID: DeactivatedID("wch_abc234", time.Date(2026, 11, 23, 2, 14, 5, 0, time.UTC)), Kind: KindDeactivated,
			WatchID: "wch_abc234", To: "credit@acme.example", Deactivated: &Deactivated{WatchName: "Loan book",
				Reason:    "webhook deliveries failed for 10 consecutive notices (each after 5 attempts); last error: HTTP 503. Fix the endpoint, then PATCH {\"active\": true} to deliver the held notices",
				LastError: "HTTP 503", Held: 3, At: "2026-11-23T02:14:05.000Z"}},
		"digest": {ID: DigestID("wch_abc234", window), Kind: KindDigest, WatchID: "wch_abc234", To: "credit@acme.example", Digest: &d},
	}
}

func mustZone(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

// golden renders m as the testdata file shows it.
func golden(m Message) string {
	return "Message-ID: <" + m.MessageID + ">\nTo: " + m.To + "\nSubject: " + m.Subject +
		"\n\n--- text/plain ---\n" + m.Text + "\n--- text/html ---\n" + m.HTML
}

// TestRenderGolden compares each rendered email with testdata/<kind>.golden
// (go test ./internal/mail -update rewrites them; docs/email.md shows them).
func TestRenderGolden(t *testing.T) {
	for name, job := range fixtures() {
		t.Run(name, func(t *testing.T) {
			m, err := Render(job, "noticesd.example")
			if err != nil {
				t.Fatal(err)
			}
			got := golden(m)
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/mail -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", name, path, got)
			}
		})
	}
}

// TestDocsShowGolden checks that docs/email.md shows the emails exactly as
// they render.
func TestDocsShowGolden(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "email.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"deactivated", "digest"} {
		m, err := Render(fixtures()[name], "noticesd.example")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), m.Text) || !strings.Contains(string(doc), "Subject: "+m.Subject) {
			t.Errorf("docs/email.md does not show the %s email as rendered (testdata/%s.golden)", name, name)
		}
	}
}

func TestRenderDigestCounts(t *testing.T) {
	tests := []struct {
		name  string
		total int
		items int
		want  []string
		not   []string
	}{
		{"one match", 1, 1, []string{"1 new notice matches"}, []string{"more"}},
		{"at the cap", DigestCap, DigestCap, []string{"50 new notices match"}, []string{"more"}},
		{"over the cap", DigestCap + 7, DigestCap, []string{"57 new notices match", "... and 7 more", "matches?since=10"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Digest{WatchName: "W", Window: "2026-11-23T20:00:00Z", FromSeq: 10, Total: tt.total}
			for i := 0; i < tt.items; i++ {
				d.Items = append(d.Items, Item{Seq: int64(11 + i), NoticeID: "ntc_x", Company: "C", NoticeType: "T", PublishedDate: "2026-11-23"})
			}
			m, err := Render(Job{ID: "digest:wch_x:1", Kind: KindDigest, WatchID: "wch_x", To: "a@b.example", Digest: d}, "d.example")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(m.Text, w) || !strings.Contains(m.HTML, strings.ReplaceAll(w, "...", "...")) {
					t.Errorf("text or HTML lacks %q:\n%s\n%s", w, m.Text, m.HTML)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(m.Text, w) {
					t.Errorf("text has %q:\n%s", w, m.Text)
				}
			}
		})
	}
}

func TestHTMLEscapes(t *testing.T) {
	j := fixtures()["digest"]
	d := *j.Digest
	d.Items = []Item{{Company: `<script>alert(1)</script> & CO`, NoticeType: "T", SourceURL: `javascript:alert(1)`}}
	d.Total = 1
	j.Digest = &d
	m, err := Render(j, "d.example")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(m.HTML, "<script>") || strings.Contains(m.HTML, `href="javascript:`) {
		t.Errorf("HTML not escaped:\n%s", m.HTML)
	}
}
