package testbin

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// shFence is a ```sh block of a description in the OpenAPI document.
var shFence = regexp.MustCompile("(?s)```sh\n(.*?)```")

// APIExample is one example of the API reference a server serves: the
// operation's method and path, and its shell block.
type APIExample struct {
	Method, Path, Block string
}

// APIExamples returns the sh examples of every operation of the OpenAPI
// document the server at base serves (GET /openapi.json, what /docs
// renders), in document order (paths, then get, post, patch, delete).
func APIExamples(tb testing.TB, client *http.Client, base string) []APIExample {
	tb.Helper()
	resp, err := client.Get(base + "/openapi.json")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /openapi.json: HTTP %d, %v", resp.StatusCode, err)
	}
	// The paths in document order: encoding/json forgets the order of an
	// object's keys, so read the keys with a decoder.
	var doc struct {
		Paths json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		tb.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(doc.Paths)))
	if _, err := dec.Token(); err != nil { // {
		tb.Fatal(err)
	}
	var out []APIExample
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			tb.Fatal(err)
		}
		var item map[string]json.RawMessage // operations, and parameters
		if err := dec.Decode(&item); err != nil {
			tb.Fatal(err)
		}
		for _, m := range []string{"get", "post", "patch", "delete"} {
			var op struct {
				Description string `json:"description"`
			}
			if raw, ok := item[m]; ok {
				if err := json.Unmarshal(raw, &op); err != nil {
					tb.Fatal(err)
				}
			}
			for _, f := range shFence.FindAllStringSubmatch(op.Description, -1) {
				out = append(out, APIExample{strings.ToUpper(m), tok.(string), f[1]})
			}
		}
	}
	return out
}

// RunAPIExamples runs the examples after the demo's export lines, in one
// bash script as RunShell does: in document order, except the DELETE
// examples, which run last in reverse order (the webhook's before the
// watch's), so every example finds what the ones before it made. Every
// curl must answer 2xx. It returns how many curl commands ran.
func RunAPIExamples(tb testing.TB, exports []string, examples []APIExample) int {
	tb.Helper()
	var blocks, deletes []string
	for _, e := range examples {
		if e.Method == http.MethodDelete {
			deletes = append(deletes, e.Block)
		} else {
			blocks = append(blocks, e.Block)
		}
	}
	slices.Reverse(deletes)
	blocks = append(blocks, deletes...)
	_, ran := RunShell(tb, strings.Join(exports, "\n")+"\n"+strings.Join(blocks, "\n"))
	if want := CurlCalls(blocks); ran != want {
		tb.Fatalf("the API reference's examples ran %d curl commands, they have %d", ran, want)
	}
	return ran
}
