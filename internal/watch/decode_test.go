package watch

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
)

// decodeSeeds are bodies where a fast JSON decoder could part from
// encoding/json: escapes and invalid UTF-8 in keys and strings, duplicate
// keys, numbers encoding/json refuses, control characters, trailing data,
// and nesting.
var decodeSeeds = []string{
	`{"identifiers":["123456780"],"filters":{"state":"NSW"}}`,
	` {"identifiers" : [ "123 456 780" , "51824753556" ] } `,
	`{"identifi\u0065rs":["123456780"]}`,
	`{"identifiers":["1"],"identifiers":["2"]}`,
	`{"a":1,"A":2}`,
	"{\"\xff\":1}",
	"{\"a\":\"\xff\xfe\"}",
	"{\"a\":\"\x01\"}",
	`{"a":"\ud800"}`,
	`{"a":"\u12"}`,
	`{"a":"\x"}`,
	`{"a":01}`,
	`{"a":1.}`,
	`{"a":-}`,
	`{"a":1e}`,
	`{"a":.5}`,
	`{"a":+1}`,
	`{"a":1}x`,
	`{"a":1}{}`,
	`{"a":1,}`,
	`{,"a":1}`,
	`{"a" 1}`,
	`{"a":[1,2,]}`,
	`{"a":[1 2]}`,
	`{"a":{"b":tru}}`,
	`{"a":nul}`,
	`{"a":NaN}`,
	`{"a":[[[[[[[[[[]]]]]]]]]]}`,
	`{"a":{"b":{"c":{"d":null}}}}`,
	`{"a":true,"b":false,"c":null,"d":-0.5e+10}`,
	`{}`,
	`[]`,
	`null`,
	`"x"`,
	`1`,
	`{`,
	`}`,
	`{"a":"b"`,
	"{\"a\":\"b\"}\x00",
	"{\"a\":\t\n\r 1}",
	"{\"a\":\v1}",
	`{"a":"\/\b\f\n\r\t\"\\"}`,
	`{"a":"` + "\u2028" + `"}`,
}

// FuzzDecodeObject holds decodeObject, which decodes with go-json, to
// stdDecodeObject, which decodes with encoding/json: the same bodies must
// fail with the same error, and the same members must come back with the
// same bytes.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		trimmed := bytes.TrimSpace(body)
		if len(trimmed) == 0 {
			return
		}
		got, gotErr := decodeObject(body)
		want, wantErr := stdDecodeObject(trimmed)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: decodeObject error %v, encoding/json error %v", body, gotErr, wantErr)
		}
		if gotErr != nil {
			if gotErr.Error() != wantErr.Error() {
				t.Fatalf("%q: error %q, encoding/json %q", body, gotErr, wantErr)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, encoding/json %d", body, len(got), len(want))
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok {
				t.Fatalf("%q: member %q missing (have %q)", body, k, got)
			}
			if !bytes.Equal(g, w) {
				t.Fatalf("%q: member %q is %q, encoding/json %q", body, k, g, w)
			}
		}
	})
}

// TestDecodeObjectDeepNesting: a body nested far deeper than encoding/json
// allows (10,000 levels) is invalid_json, not a crash: a decoder that
// recursed once a level would exhaust the goroutine's stack, which no
// recover catches. A body within the 8 MiB cap nests at most 4 million deep.
func TestDecodeObjectDeepNesting(t *testing.T) {
	for _, tt := range []struct{ name, open, close string }{
		{"arrays", "[", "]"},
		{"objects", `{"a":`, "}"},
		{"unclosed arrays", "[", ""},
	} {
		for _, depth := range []int{10001, 1000000} {
			t.Run(fmt.Sprintf("%s/%d", tt.name, depth), func(t *testing.T) {
				body := `{"identifiers": ["123456780"], "filters": ` + strings.Repeat(tt.open, depth) + "1" + strings.Repeat(tt.close, depth) + "}"
				_, err := ParseMatchRequest([]byte(body))
				checkErr(t, err, errs.InvalidJSON, "exceeded max depth")
			})
		}
	}
}
