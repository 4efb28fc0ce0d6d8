package ident

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
)

func TestCheckDigits(t *testing.T) {
	tests := []struct {
		name string
		in   string
		acn  bool
		abn  bool
	}{
		{"ASIC example ACN 000 000 019", "000000019", true, false},
		{"ASIC example ACN 004 085 616", "004085616", true, false},
		{"bad ACN check digit", "004085617", false, false},
		{"ATO example ABN", "51824753556", false, true},
		{"bad ABN", "51824753557", false, false},
		{"letters", "00408561a", false, false},
		{"short", "12345678", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidACN(tt.in); got != tt.acn {
				t.Errorf("ValidACN(%q) = %v, want %v", tt.in, got, tt.acn)
			}
			if got := ValidABN(tt.in); got != tt.abn {
				t.Errorf("ValidABN(%q) = %v, want %v", tt.in, got, tt.abn)
			}
		})
	}
}

func TestABNFromACN(t *testing.T) {
	for _, acn := range []string{"004085616", "000000019", "123456780"} {
		abn := ABNFromACN(acn)
		if len(abn) != 11 || abn[2:] != acn || !ValidABN(abn) {
			t.Errorf("ABNFromACN(%s) = %q", acn, abn)
		}
	}
}

func TestNormalise(t *testing.T) {
	tests := []struct {
		in   string
		want string
		kind Kind
		ok   bool
	}{
		{"123 456 780", "123456780", ACN, true},
		{"51 824 753 556", "51824753556", ABN, true},
		{"", "", 0, false},
		{"1234567890", "", 0, false},
		{"12345678X", "", 0, false},
		{" 123456780 ", "123456780", ACN, true},
		{"123\t456780", "", 0, false},           // only spaces are removed
		{"123\u00a0456780", "", 0, false},       // a no-break space is not a space here
		{"123\u2009456\u2009780", "", 0, false}, // nor a thin space
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			id, ok := Normalise(tt.in)
			if ok != tt.ok || id.Value != tt.want || id.Kind != tt.kind {
				t.Errorf("Normalise(%q) = %+v, %v", tt.in, id, ok)
			}
		})
	}
}

func TestParseList(t *testing.T) {
	raw := func(s string) []json.RawMessage {
		var r []json.RawMessage
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	ids, err := ParseList(raw(`["123 456 780","123456780","51824753556","004085617"]`), errs.InvalidIdentifier)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || ids[0].Value != "123456780" || ids[1].Kind != ABN || ids[2].Value != "004085617" {
		t.Fatalf("got %+v", ids)
	}
	_, err = ParseList(raw(`["123456780", 123456780, "x", "12"]`), errs.InvalidIdentifier)
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InvalidIdentifier {
		t.Fatalf("got %v", err)
	}
	if want := "identifier 123456780 at position 1 is not a 9-digit ACN or 11-digit ABN (as a JSON string of digits; spaces allowed); 3 of 4 identifiers are malformed"; e.Message != want {
		t.Fatalf("message %q", e.Message)
	}
	_, err = ParseList(raw(`["123456780", null]`), errs.InvalidIdentifier)
	if e, ok := errs.As(err); !ok || !strings.HasPrefix(e.Message, "identifier null at position 1 ") {
		t.Fatalf("null: got %v, want the message to show null", err)
	}
	big := make([]json.RawMessage, MaxIdentifiers+1)
	if _, err := ParseList(big, errs.InvalidIdentifier); !errs.Is(err, errs.TooManyIdentifiers) {
		t.Fatalf("got %v", err)
	}
}

// TestParseArrayAgreesWithParseList: the fast split of a plain array gives
// what decoding it element by element gives, and declines anything else.
func TestParseArrayAgreesWithParseList(t *testing.T) {
	tests := []struct {
		raw   string
		plain bool
	}{
		{`["004085616", "53 004 085 616", "004085616"]`, true},
		{` [ "004085616" ,"600000002"]  `, true},
		{`[]`, true},
		{`["004085616", "12345"]`, true},
		{`["004085616", "x"]`, true},
		{`["00408\u0035616"]`, false},
		{`["004085616", 42]`, false},
		{`["caf\u00e9"]`, false},
		{`["café"]`, false},
		{`["004085616"] x`, false},
		{`["004085616",]`, false},
		{`{"a": 1}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			fast, ok, fastErr := ParseArray([]byte(tt.raw), errs.InvalidIdentifier)
			if ok != tt.plain {
				t.Fatalf("ParseArray ok = %v, want %v", ok, tt.plain)
			}
			if !ok {
				return
			}
			var list []json.RawMessage
			if err := json.Unmarshal([]byte(tt.raw), &list); err != nil {
				t.Fatal(err)
			}
			slow, slowErr := ParseList(list, errs.InvalidIdentifier)
			if !reflect.DeepEqual(fast, slow) || fmt.Sprint(fastErr) != fmt.Sprint(slowErr) {
				t.Errorf("ParseArray = %v, %v; ParseList = %v, %v", fast, fastErr, slow, slowErr)
			}
		})
	}
}

// TestDeduplication: identifiers are deduplicated by value and kind in
// first-seen order, an ACN and an ABN with the same digits' value stay
// apart, and a large random list keeps what a map of strings keeps.
func TestDeduplication(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"ACN and ABN of equal value", []string{"000000001", "00000000001", "000000001"}, []string{"000000001", "00000000001"}},
		{"largest values", []string{"999999999", "99999999999", "999 999 999", "99 999 999 999"}, []string{"999999999", "99999999999"}},
		{"zero", []string{"000000000", "00000000000", "000 000 000"}, []string{"000000000", "00000000000"}},
		{"first-seen order", []string{"600000002", "004085616", "600000002", "53004085616", "004085616"}, []string{"600000002", "004085616", "53004085616"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids, ok, err := ParseArray(quoted(tt.in), errs.InvalidIdentifier)
			if !ok || err != nil {
				t.Fatal(ok, err)
			}
			var got []string
			for _, id := range ids {
				got = append(got, id.Value)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("random", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(1, 2))
		in := make([]string, MaxIdentifiers)
		for i := range in {
			if rng.IntN(2) == 0 {
				in[i] = fmt.Sprintf("%09d", rng.IntN(30000))
			} else {
				in[i] = fmt.Sprintf("%011d", rng.IntN(30000))
			}
		}
		ids, ok, err := ParseArray(quoted(in), errs.InvalidIdentifier)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		seen := map[string]bool{}
		var want []string
		for _, s := range in {
			if !seen[s] {
				seen[s] = true
				want = append(want, s)
			}
		}
		if len(ids) != len(want) {
			t.Fatalf("kept %d identifiers, want %d", len(ids), len(want))
		}
		for i, id := range ids {
			if id.Value != want[i] {
				t.Fatalf("identifier %d is %s, want %s", i, id.Value, want[i])
			}
		}
	})
}

// quoted returns list as a JSON array of strings.
func quoted(list []string) []byte {
	b, _ := json.Marshal(list)
	return b
}
