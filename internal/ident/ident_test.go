package ident

import (
	"encoding/json"
	"fmt"
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
