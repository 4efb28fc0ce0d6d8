package api

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/watch"
)

// screenJSON mirrors the POST /v1/match answer.
type screenJSON struct {
	Matched []struct {
		Identifier             string            `json:"identifier"`
		ACN                    *string           `json:"acn"`
		CompanyName            *string           `json:"company_name"`
		NoticeCount            int               `json:"notice_count"`
		LatestNotice           screenLatestJSON  `json:"latest_notice"`
		Insolvency             bool              `json:"insolvency"`
		LatestInsolvencyNotice *screenLatestJSON `json:"latest_insolvency_notice"`
		NoticePurposes         []string          `json:"notice_purposes"`
	} `json:"matched"`
	Unmatched          []string `json:"unmatched"`
	Unresolved         []string `json:"unresolved"`
	UnmatchedCompanies []struct {
		Identifier  string  `json:"identifier"`
		ACN         *string `json:"acn"`
		CompanyName *string `json:"company_name"`
	} `json:"unmatched_companies"`
	Counts struct {
		Submitted  int `json:"submitted"`
		Matched    int `json:"matched"`
		Unmatched  int `json:"unmatched"`
		Unresolved int `json:"unresolved"`
	} `json:"counts"`
}

// screenLatestJSON is a latest notice of a screen's match.
type screenLatestJSON struct {
	ID              string  `json:"id"`
	Seq             int64   `json:"notice_seq"`
	PublishedDate   string  `json:"published_date"`
	NoticeType      string  `json:"notice_type"`
	NoticePurpose   string  `json:"notice_purpose"`
	AppointmentType *string `json:"appointment_type"`
}

func (s screenJSON) matchedIDs() []string {
	out := []string{}
	for _, m := range s.Matched {
		out = append(out, m.Identifier)
	}
	return out
}

// screenOK posts body to /v1/match with the read key and requires 200.
func (f *watchFixture) screenOK(t *testing.T, body string) (screenJSON, response) {
	t.Helper()
	res := f.call(t, http.MethodPost, "/v1/match", f.read, body)
	if res.status != http.StatusOK {
		t.Fatalf("POST /v1/match: status %d; body %.300s", res.status, res.body)
	}
	var s screenJSON
	decodeBody(t, res, &s)
	return s, res
}

// TestScreen: the three disjoint lists in first-seen order, counts, the
// matched entry shape, bad check digits in unresolved, and filters.
func TestScreen(t *testing.T) {
	f := newWatchFixture(t, nil)
	// Alpha by ACN (with spaces, then repeated) and by ABN, Delta (register
	// only), an unknown well-formed ACN, an ACN with a bad check digit,
	// Gamma (notices only, not in the register), an unknown ABN.
	body := `{"identifiers": ["123 456 780", "333333332", "444444446", "123456789",
		"11123456780", "123456780", "222222228", "12345678901"]}`
	s, res := f.screenOK(t, body)

	if ks := keysOf(t, res.body); !slices.Equal(ks, sortedKeys("matched", "unmatched", "unresolved", "counts", "unmatched_companies")) {
		t.Errorf("members %v", ks)
	}
	if got, want := s.matchedIDs(), []string{"123456780", "11123456780", "222222228"}; !slices.Equal(got, want) {
		t.Errorf("matched %v, want %v", got, want)
	}
	if want := []string{"333333332"}; !slices.Equal(s.Unmatched, want) {
		t.Errorf("unmatched %v, want %v", s.Unmatched, want)
	}
	// An unmatched company comes with the register's ACN and name.
	if u := s.UnmatchedCompanies; len(u) != 1 || u[0].Identifier != "333333332" || u[0].ACN == nil || *u[0].ACN != "333333332" ||
		u[0].CompanyName == nil || *u[0].CompanyName != "Delta Pty Ltd" {
		t.Errorf("unmatched_companies %+v, want 333333332 with its ACN and register name", u)
	}
	if want := []string{"444444446", "123456789", "12345678901"}; !slices.Equal(s.Unresolved, want) {
		t.Errorf("unresolved %v, want %v (bad check digits are unresolved, not errors)", s.Unresolved, want)
	}
	if c := s.Counts; c.Submitted != 7 || c.Matched != 3 || c.Unmatched != 1 || c.Unresolved != 3 {
		t.Errorf("counts %+v, want submitted 7 (distinct after normalising), matched 3, unmatched 1, unresolved 3", c)
	}
	alpha := s.Matched[0]
	if alpha.ACN == nil || *alpha.ACN != "123456780" || alpha.CompanyName == nil || *alpha.CompanyName != "Alpha Pty Ltd" || alpha.NoticeCount != 2 {
		t.Errorf("Alpha: acn %v company_name %v notice_count %d, want 123456780, Alpha Pty Ltd, 2", alpha.ACN, alpha.CompanyName, alpha.NoticeCount)
	}
	if ln := alpha.LatestNotice; ln.PublishedDate != "2026-03-10" || ln.NoticePurpose != "Deregistration" || ln.AppointmentType != nil || !strings.HasPrefix(ln.ID, "ntc_") || ln.Seq == 0 {
		t.Errorf("Alpha latest_notice %+v, want N2 (deregistration counts by default)", ln)
	}
	// The latest notice a deregistration, the insolvency notice before it beside it.
	if li := alpha.LatestInsolvencyNotice; !alpha.Insolvency || li == nil || li.NoticePurpose != "Appointment" || li.ID == alpha.LatestNotice.ID ||
		!slices.Equal(alpha.NoticePurposes, []string{"Appointment", "Deregistration"}) {
		t.Errorf("Alpha: insolvency %v latest_insolvency_notice %+v notice_purposes %q, want true, N1, [Appointment Deregistration]",
			alpha.Insolvency, li, alpha.NoticePurposes)
	}
	if byABN := s.Matched[1]; byABN.ACN == nil || *byABN.ACN != "123456780" || byABN.NoticeCount != 2 {
		t.Errorf("Alpha by ABN: acn %v notice_count %d, want the ACN and 2", byABN.ACN, byABN.NoticeCount)
	}
	if gamma := s.Matched[2]; gamma.NoticeCount != 1 || gamma.LatestNotice.NoticeType != "Appointment of Liquidator" ||
		gamma.LatestNotice.AppointmentType == nil || *gamma.LatestNotice.AppointmentType != "Creditors' Voluntary Liquidation" {
		t.Errorf("Gamma: %+v", gamma)
	}
	t.Run("entry shapes", func(t *testing.T) {
		var raw struct {
			Matched []map[string]any `json:"matched"`
		}
		decodeBody(t, res, &raw)
		for _, m := range raw.Matched {
			var ks []string
			for k := range m {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			if !slices.Equal(ks, sortedKeys("identifier", "acn", "company_name", "notice_count", "latest_notice",
				"insolvency", "latest_insolvency_notice", "notice_purposes")) {
				t.Errorf("matched entry members %v", ks)
			}
			ln, _ := m["latest_notice"].(map[string]any)
			ks = ks[:0]
			for k := range ln {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			if !slices.Equal(ks, sortedKeys("id", "notice_seq", "published_date", "notice_type", "notice_purpose", "appointment_type")) {
				t.Errorf("latest_notice members %v", ks)
			}
		}
	})
	t.Run("filters", func(t *testing.T) {
		s, _ := f.screenOK(t, `{"identifiers": ["123456780", "333333332"], "filters": {"include_deregistration": false}}`)
		if len(s.Matched) != 1 || s.Matched[0].NoticeCount != 1 || s.Matched[0].LatestNotice.PublishedDate != "2026-02-01" {
			t.Errorf("without deregistration: %+v, want Alpha with N1 only", s.Matched)
		}
		s, _ = f.screenOK(t, `{"identifiers": ["123456780"], "filters": {"state": "QLD"}}`)
		if len(s.Matched) != 0 || !slices.Equal(s.Unmatched, []string{"123456780"}) || s.Counts.Submitted != 1 {
			t.Errorf("Alpha filtered to QLD: %+v, want unmatched", s)
		}
	})
	t.Run("empty lists are [] not null", func(t *testing.T) {
		_, res := f.screenOK(t, `{"identifiers": ["444444446"]}`)
		for _, s := range []string{`"matched":[]`, `"unmatched":[]`} {
			if !strings.Contains(string(res.body), s) {
				t.Errorf("body %s lacks %s", res.body, s)
			}
		}
	})
	t.Run("account key may screen too", func(t *testing.T) {
		if res := f.call(t, http.MethodPost, "/v1/match", f.acct, `{"identifiers": ["123456780"]}`); res.status != 200 {
			t.Errorf("status %d; body %s", res.status, res.body)
		}
	})
}

// TestScreenValidation: every 400 of POST /v1/match; with two problems the
// earlier check wins.
func TestScreenValidation(t *testing.T) {
	f := newWatchFixture(t, nil)
	tests := []struct {
		name string
		body string
		code string
		msg  []string
	}{
		{"no body", "", "empty_request", nil},
		{"not JSON", "123456780", "invalid_json", nil},
		{"empty object", "{}", "empty_request", nil},
		{"empty list", `{"identifiers": []}`, "empty_request", nil},
		{"null list", `{"identifiers": null}`, "empty_request", nil},
		{"misspelt identifiers", `{"identifers": ["123456780"]}`, "invalid_filter", []string{"identifers"}},
		{"too many", identifiersBody(50001, 1), "too_many_identifiers", []string{"50001", "50000"}},
		{"too many before malformed", identifiersBody(50000, 1, `"bad"`), "too_many_identifiers", nil},
		{"malformed: first bad value and position", `{"identifiers": ["123456780", "222222228", "12-345", "x"]}`, "invalid_identifier", []string{`"12-345"`, "position 2", "2 of 4"}},
		{"ten digits", `{"identifiers": ["1234567890"]}`, "invalid_identifier", []string{"1234567890", "position 0"}},
		{"JSON number", `{"identifiers": ["123456780", 222222228]}`, "invalid_identifier", []string{"222222228", "position 1"}},
		{"empty string", `{"identifiers": [""]}`, "invalid_identifier", nil},
		{"malformed before bad filter", `{"identifiers": ["1"], "filters": {"colour": 1}}`, "invalid_identifier", nil},
		{"unknown filter", `{"identifiers": ["123456780"], "filters": {"colour": 1}}`, "invalid_filter", []string{"colour"}},
		{"watch-only field", `{"identifiers": ["123456780"], "name": "x"}`, "invalid_filter", []string{"name"}},
		{"bad filters.q", `{"identifiers": ["123456780"], "filters": {"q": "a OR"}}`, "invalid_filter", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, http.MethodPost, "/v1/match", f.read, tt.body)
			wantError(t, res, http.StatusBadRequest, tt.code)
			msg := errorMessage(t, res)
			for _, s := range tt.msg {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not contain %q", msg, s)
				}
			}
		})
	}
}

// TestScreenLimits: 50,000 identifiers (about 600 KB) are screened; a
// 9 MiB body is 413 payload_too_large in the JSON error shape.
func TestScreenLimits(t *testing.T) {
	f := newWatchFixture(t, nil)
	t.Run("50,000 identifiers", func(t *testing.T) {
		body := identifiersBody(50000, 100000000)
		if len(body) < 500<<10 {
			t.Fatalf("body is only %d bytes", len(body))
		}
		s, _ := f.screenOK(t, body)
		if s.Counts.Submitted != 50000 || s.Counts.Matched+s.Counts.Unmatched+s.Counts.Unresolved != 50000 ||
			len(s.Matched)+len(s.Unmatched)+len(s.Unresolved) != 50000 {
			t.Errorf("counts %+v, want 50000 split over the lists", s.Counts)
		}
		if len(s.Unresolved) > 0 && s.Unresolved[0] != "100000000" {
			t.Errorf("unresolved starts %q, want first-seen order", s.Unresolved[0])
		}
	})
	t.Run("9 MiB body", func(t *testing.T) {
		addr := strings.TrimPrefix(f.listen(t), "http://")
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		size := 9 << 20
		head := fmt.Sprintf("POST /v1/match HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n", HeaderAPIKey, f.read, size)
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = conn.Write([]byte(identifiersBody(size/12, 100000000)[:size])) }()
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("read response: %v", err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		wantError(t, response{status: res.StatusCode, header: res.Header, body: body}, 413, "payload_too_large")
	})
}

// TestScreenStreamed: the streamed answer is exactly the compact JSON of
// the result (what encoding it whole with writeJSON would give), on a large
// screen too.
func TestScreenStreamed(t *testing.T) {
	f := newWatchFixture(t, nil)
	for _, body := range []string{
		`{"identifiers": ["123 456 780", "333333332", "444444446", "123456789", "11123456780", "222222228"]}`,
		identifiersBody(5000, 100000000),
	} {
		res := f.call(t, http.MethodPost, "/v1/match", f.read, body)
		if res.status != http.StatusOK {
			t.Fatalf("HTTP %d %.300s", res.status, res.body)
		}
		var r watch.ScreenResult
		decodeBody(t, res, &r)
		want, err := marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(res.body, want) {
			t.Errorf("streamed body differs from the encoded result:\n got %.300s\nwant %.300s", res.body, want)
		}
	}
}
