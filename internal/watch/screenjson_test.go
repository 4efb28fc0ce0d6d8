package watch

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

// encodingJSON is the API's reference encoding: encoding/json, HTML
// escaping off.
func encodingJSON(t testing.TB, v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestScreenAppendJSONMatchesEncodingJSON: the hand-written encoder writes
// byte for byte what encoding/json writes, for awkward strings too.
func TestScreenAppendJSONMatchesEncodingJSON(t *testing.T) {
	awkward := []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f",
		"<html> & 'x'", "café société", "\u2028 and \u2029", "bad \xff utf8 \xc3", "emoji 🎉", "日本語"}
	s := func(v string) *string { return &v }
	res := ScreenResult{
		Matched: []Matched{
			{Identifier: "004085616", ACN: s("004085616"), CompanyName: s("ALPHA \"MINING\" PTY LTD"), NoticeCount: 3,
				LatestNotice: LatestNotice{ID: "ntc_abc", Seq: 42, PublishedDate: "2026-11-20", NoticeType: "Appointment", NoticePurpose: "Appointment", AppointmentType: s("Liquidator")},
				Insolvency:   true, LatestInsolvencyNotice: &LatestNotice{ID: "ntc_ghi", Seq: 7, PublishedDate: "2026-10-01", NoticePurpose: "meeting"},
				NoticePurposes: []string{"Appointment", "DEREGISTRATION", "meeting"}},
			{Identifier: "53004085616", NoticeCount: 1, LatestNotice: LatestNotice{ID: "ntc_def", Seq: -1}, NoticePurposes: []string{}},
		},
		Unmatched:  []string{"600000002"},
		Unresolved: []string{},
		Counts:     ScreenCounts{Submitted: 4, Matched: 2, Unmatched: 1, Unresolved: 0},
		UnmatchedCompanies: []UnmatchedCompany{{Identifier: "600000002", ACN: s("600000002"), CompanyName: s("BETA <TRADING> PTY LTD")},
			{Identifier: "43600000002"}},
	}
	check := func(name string, r ScreenResult) {
		t.Helper()
		want := encodingJSON(t, r)
		if got := r.AppendJSON(nil); !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	check("fixed", res)
	check("empty", ScreenResult{})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 500; i++ {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			b[j] = byte(rng.IntN(256))
		}
		r := res
		r.Matched = append([]Matched(nil), res.Matched...)
		r.Matched[0].CompanyName = s(awkward[i%len(awkward)] + string(b))
		r.Matched[1].LatestNotice.NoticeType = string(b)
		r.Unmatched = []string{string(b), awkward[(i+3)%len(awkward)]}
		r.UnmatchedCompanies = []UnmatchedCompany{{Identifier: string(b), CompanyName: s(awkward[(i+9)%len(awkward)])}}
		r.Matched[0].NoticePurposes = []string{string(b), awkward[(i+5)%len(awkward)]}
		r.Matched[0].LatestInsolvencyNotice = &LatestNotice{NoticeType: string(b), AppointmentType: s(awkward[(i+7)%len(awkward)])}
		check("random", r)
	}
}

func BenchmarkScreenJSON(b *testing.B) {
	s := func(v string) *string { return &v }
	var r ScreenResult
	for i := 0; i < 50000; i++ {
		r.Matched = append(r.Matched, Matched{Identifier: "004085616", ACN: s("004085616"), CompanyName: s("ALPHA MINING PTY LTD"), NoticeCount: 3,
			LatestNotice: LatestNotice{ID: "ntc_abcdefghijklmnop", Seq: int64(i), PublishedDate: "2026-11-20", NoticeType: "Appointment of liquidator", NoticePurpose: "Appointment", AppointmentType: s("Liquidator")}})
	}
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			encodingJSON(b, r)
		}
	})
	b.Run("append-json", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = r.AppendJSON(buf[:0])
		}
	})
}

// TestScreenWriteJSONMatchesAppendJSON: the streamed encoding writes the
// same bytes as the buffered one, for answers smaller and larger than one
// flush.
func TestScreenWriteJSONMatchesAppendJSON(t *testing.T) {
	for _, n := range []int{0, 3, 5000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			r := screenFixture(n)
			var got bytes.Buffer
			if err := r.WriteJSON(&got); err != nil {
				t.Fatal(err)
			}
			if want := r.AppendJSON(nil); !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("WriteJSON differs from AppendJSON (%d vs %d bytes)", got.Len(), len(want))
			}
		})
	}
}

// screenFixture is a screen answer with n matched, n unmatched and n
// unresolved identifiers.
func screenFixture(n int) ScreenResult {
	s := func(v string) *string { return &v }
	r := ScreenResult{Matched: []Matched{}, Unmatched: []string{}, Unresolved: []string{}}
	for i := 0; i < n; i++ {
		id := strconv.Itoa(100000000 + i)
		r.Matched = append(r.Matched, Matched{Identifier: id, ACN: s(id), CompanyName: s("ALPHA \"MINING\" PTY LTD " + id), NoticeCount: i,
			LatestNotice: LatestNotice{ID: "ntc_" + id, Seq: int64(i), PublishedDate: "2026-11-20", NoticeType: "Appointment", NoticePurpose: "Appointment"}})
		r.Unmatched = append(r.Unmatched, "5"+id+"1")
		r.Unresolved = append(r.Unresolved, id)
	}
	r.Counts = ScreenCounts{Submitted: 3 * n, Matched: n, Unmatched: n, Unresolved: n}
	return r
}
