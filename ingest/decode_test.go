package ingest

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"unicode/utf8"
)

// decodeSeeds are lines where two JSON decoders could part: the fixtures'
// lines and forms of JSON that are easy to get wrong.
func decodeSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	for _, path := range []string{"testdata/notices.jsonl", "testdata/broken.jsonl", "testdata/crlf.jsonl"} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			seeds = append(seeds, append([]byte(nil), sc.Bytes()...))
		}
		f.Close()
	}
	for _, s := range []string{
		`{}`,
		`{} `,
		`{}x`,
		`{} {}`,
		`{"SOURCE_ID":"a","Published_At":"2026-01-01"}`,
		`{"source_id":"a","source_id":"b"}`,
		`{"source_id":null,"company_name":null,"practitioners":null}`,
		`{"source_id":1}`,
		`{"source_id":"a","practitioners":[{"name":"x","firm":null,"role":7}]}`,
		`{"source_id":"a","practitioners":{}}`,
		`{"source_id":"a","text":"\u0000\ud800\udc00\ud800 \u00e9\/\"\\"}`,
		`{"source_id":"a","text":"\x"}`,
		`{"source_id":"a","text":"tab	in string"}`,
		`{"source_id":"a","extra":{"deep":[1,2,{"x":null}]},"n":-1.5e+10}`,
		`{"source_id":"a",}`,
		`{"source_id":"a" "acn":"1"}`,
		`{"source_id":"a","acn":tru}`,
		`{"source_id":"a","acn":true}`,
		`{"source_id":"a","n":01}`,
		`{"source_id":"a","n":1.}`,
		`{"source_id":"a","n":.5}`,
		`{"source_id":"a","n":NaN}`,
		`{"source_id":"a"`,
		`{"source_id":"a","text":"unterminated}`,
		`  {"source_id":"a"}`,
		"{\"source_id\":\"a\"}\t",
		`{"source_id":"a","replaces":""}`,
	} {
		seeds = append(seeds, []byte(s))
	}
	return seeds
}

// checkDecodeObject holds decodeObject (go-json, falling back to
// encoding/json on a refusal) to encoding/json's answer for line: the same
// value when encoding/json accepts it, the same reason when it does not.
func checkDecodeObject(t *testing.T, line []byte) {
	t.Helper()
	if !utf8.Valid(line) {
		return // ParseNoticeLine refuses these before decoding
	}
	var got, want noticeLine
	gotErr := decodeObject(line, &got)
	wantErr := decodeStd(line, &want)
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Fatalf("%q: decodeObject error %v, encoding/json error %v", line, gotErr, wantErr)
	case gotErr != nil && gotErr.Error() != wantErr.Error():
		t.Fatalf("%q: decodeObject says %q, encoding/json %q", line, gotErr, wantErr)
	case gotErr == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("%q: decodeObject gave %+v, encoding/json %+v", line, got, want)
	}
}

// decodeStd is decodeObject with encoding/json alone.
func decodeStd(line []byte, v *noticeLine) *LineError {
	if err := objectStart(line); err != nil {
		return err
	}
	return decodeReason(json.Unmarshal(line, v))
}

func TestDecodeObjectAgreesWithEncodingJSON(t *testing.T) {
	for _, line := range decodeSeeds(t) {
		t.Run(string(line), func(t *testing.T) { checkDecodeObject(t, line) })
	}
}

// FuzzDecodeObject looks for a line go-json decodes differently from
// encoding/json (`go test -fuzz FuzzDecodeObject ./ingest`).
func FuzzDecodeObject(f *testing.F) {
	for _, line := range decodeSeeds(f) {
		f.Add(line)
	}
	f.Fuzz(checkDecodeObject)
}
