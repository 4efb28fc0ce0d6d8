package sample

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
)

func TestABNOfMatchesIdent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	acns := []string{"000000019", "004085616", "123456780"}
	for range 2000 {
		acns = append(acns, acnOf(r.Int64N(100_000_000)))
	}
	for _, acn := range acns {
		if !ident.ValidACN(acn) {
			t.Fatalf("acnOf gave %s, which fails the ACN check", acn)
		}
		if got, want := abnOf(acn), ident.ABNFromACN(acn); got != want {
			t.Fatalf("abnOf(%s) = %s, ident.ABNFromACN = %s", acn, got, want)
		}
	}
}

func TestCorruptACN(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		acn := acnOf(r.Int64N(100_000_000))
		bad := corruptACN(acn, r)
		if ident.ValidACN(bad) || bad[:8] != acn[:8] || len(bad) != 9 {
			t.Fatalf("corruptACN(%s) = %s", acn, bad)
		}
	}
}

func TestCalendar(t *testing.T) {
	for _, d := range []time.Time{
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1974, 12, 31, 23, 59, 59, 0, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 18, 3, 0, 7, 0, time.UTC),
		time.Date(2100, 3, 1, 0, 0, 0, 0, time.UTC),
	} {
		t.Run(d.Format(time.RFC3339), func(t *testing.T) {
			day := int32(d.Unix() / 86400)
			if got := dayOf(d.Year(), int(d.Month()), d.Day()); got != day {
				t.Fatalf("dayOf = %d, want %d", got, day)
			}
			if y, m, dd := civil(day); y != d.Year() || m != int(d.Month()) || dd != d.Day() {
				t.Fatalf("civil(%d) = %d-%d-%d", day, y, m, dd)
			}
			if got := weekday(day); got != int(d.Weekday()) {
				t.Fatalf("weekday = %d, want %d", got, d.Weekday())
			}
			if got, want := string(appendTimestamp(nil, d.Unix())), d.Format("2006-01-02T15:04:05Z"); got != want {
				t.Fatalf("appendTimestamp = %s, want %s", got, want)
			}
			if got, want := string(appendDMY(nil, day)), d.Format("02/01/2006"); got != want {
				t.Fatalf("appendDMY = %s, want %s", got, want)
			}
			if got, want := string(appendLongDate(nil, day)), d.Format("2 January 2006"); got != want {
				t.Fatalf("appendLongDate = %s, want %s", got, want)
			}
		})
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\r\x01", "CAFÉ & O'BRIEN <x>"} {
		var back string
		if err := json.Unmarshal(appendJSONString(nil, s), &back); err != nil || back != s {
			t.Fatalf("%q: round trip gave %q, %v", s, back, err)
		}
		if err := json.Unmarshal(appendJSONBytes(nil, []byte(s)), &back); err != nil || back != s {
			t.Fatalf("%q: bytes round trip gave %q, %v", s, back, err)
		}
	}
}

func TestSlug(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ACME CIVIL PTY LTD", "acme-civil-pty-ltd"},
		{"O'CONNOR CAFÉ PTY. LTD. (IN LIQUIDATION)", "o-connor-cafe-pty-ltd-in-liquidation"},
		{"J & M SMITH PTY LTD trading as Bayside Plumbing", "j-m-smith-pty-ltd-trading-as-bayside-plumbing"},
	}
	for _, tt := range tests {
		if got := string(appendSlug(nil, tt.in)); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTitleCase(t *testing.T) {
	for in, want := range map[string]string{"BAYSIDE PLUMBING": "Bayside Plumbing", "MCDONALD": "McDonald", "O'BRIEN CAFÉ": "O'Brien Café"} {
		if got := titleCase(in); got != want {
			t.Errorf("titleCase(%q) = %q, want %q", in, got, want)
		}
	}
}
