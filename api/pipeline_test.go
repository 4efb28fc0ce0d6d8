package api

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
)

// TestPipelinedRequests writes several HTTP/1.1 requests in one write on
// one connection (pipelining) to a real listener: each gets its own
// response, in order, with its own body, in both modes, whatever path it
// takes (a key checked first or an early read, a body read from the
// stream, a heavy request holding a slot, a streamed answer). fasthttp
// v1.51 lost every response but the last of a pipelined batch
// (ReduceMemoryUsage gave the write buffer back to its pool unflushed):
// a POST /v1/watches followed by a GET created the watch and only the
// GET's answer came back.
func TestPipelinedRequests(t *testing.T) {
	for _, mode := range servedModes {
		t.Run(mode, func(t *testing.T) {
			s := newServed(t, mode, config.Default())
			read := func(target string) rawRequest {
				return rawRequest{method: http.MethodGet, target: target, key: s.read}
			}
			missing := read("/v1/notices/ntc_missing")
			search := read("/v1/notices?limit=1")
			export := read("/v1/notices")
			export.header = map[string]string{"Accept": "text/csv"}
			screen := rawRequest{method: http.MethodPost, target: "/v1/match", key: s.read, body: `{"identifiers":["123456780","333333332"]}`}
			create := rawRequest{method: http.MethodPost, target: "/v1/watches", key: s.acct, body: `{"name":"pipelined","identifiers":["123456780"]}`}
			list := rawRequest{method: http.MethodGet, target: "/v1/watches", key: s.acct}
			var created string // the id the watch creation answered
			tests := []struct {
				name string
				reqs []rawRequest
				// check checks response i's status and body.
				check []func(t *testing.T, r response)
			}{
				{"two reads, key not seen yet", []rawRequest{search, missing}, []func(*testing.T, response){wantSearch, wantNotFound}},
				{"two reads, key seen (early reads)", []rawRequest{missing, search}, []func(*testing.T, response){wantNotFound, wantSearch}},
				{"a watch created, then listed", []rawRequest{create, list}, []func(*testing.T, response){
					func(t *testing.T, r response) {
						var w watchJSON
						if r.status != http.StatusCreated || json.Unmarshal(r.body, &w) != nil || w.ID == "" {
							t.Fatalf("watch creation: HTTP %d %s, want 201 with the watch", r.status, r.body)
						}
						created = w.ID
					},
					func(t *testing.T, r response) {
						if r.status != http.StatusOK || created == "" || !strings.Contains(string(r.body), created) {
							t.Errorf("watch list: HTTP %d %s, want 200 listing %s", r.status, r.body, created)
						}
					}}},
				{"an export, then a read", []rawRequest{export, missing}, []func(*testing.T, response){wantExport, wantNotFound}},
				{"a bulk screen, then reads", []rawRequest{screen, search, missing}, []func(*testing.T, response){wantScreen, wantSearch, wantNotFound}},
				{"a read, a bulk screen, an export", []rawRequest{missing, screen, export}, []func(*testing.T, response){wantNotFound, wantScreen, wantExport}},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					conn := dial(t, s.base, 10*time.Second)
					var batch strings.Builder
					for _, r := range tt.reqs {
						batch.WriteString(r.bytes())
					}
					if _, err := io.WriteString(conn, batch.String()); err != nil { // one write: all of them at once
						t.Fatal(err)
					}
					for i, r := range readResponses(t, bufio.NewReader(conn), tt.reqs) {
						t.Run(tt.reqs[i].method+" "+tt.reqs[i].target, func(t *testing.T) { tt.check[i](t, r) })
					}
				})
			}
		})
	}
}

func wantSearch(t *testing.T, r response) {
	t.Helper()
	var page searchResult
	if r.status != http.StatusOK || json.Unmarshal(r.body, &page) != nil || len(page.Data) != 1 {
		t.Errorf("search: HTTP %d %.300s, want 200 with one notice", r.status, r.body)
	}
}

func wantNotFound(t *testing.T, r response) {
	t.Helper()
	wantError(t, r, http.StatusNotFound, "not_found")
}

func wantExport(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusOK || r.header.Get("Content-Type") != contentTypeCSV || !strings.HasPrefix(string(r.body), "id,notice_seq,") {
		t.Errorf("export: HTTP %d %s %.300s, want 200 CSV with its header row", r.status, r.header.Get("Content-Type"), r.body)
	}
}

func wantScreen(t *testing.T, r response) {
	t.Helper()
	var s struct {
		Counts struct{ Submitted, Matched int } `json:"counts"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &s) != nil || s.Counts.Submitted != 2 || s.Counts.Matched != 1 {
		t.Errorf("screen: HTTP %d %.300s, want 200 with 2 submitted, 1 matched", r.status, r.body)
	}
}
