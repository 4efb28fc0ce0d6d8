// Package scale runs the built noticesd binary in scale mode
// (NOTICES_BACKEND=scale) against the live Elasticsearch and Redis of
// package testservers, through the HTTP API only: data loaded with
// `noticesd ingest`, an account made with `noticesd accounts create`, every
// read route compared with an embedded server on the same data, two serve
// replicas on one namespace, and namespace isolation.
package scale

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/mappings"
	"github.com/noticesd/noticesd/test/testbin"
)

func TestMain(m *testing.M) { testservers.Main(m) }

// server is one `noticesd serve` process.
type server struct {
	cmd    *exec.Cmd
	stderr *testbin.LockedBuffer
	base   string
}

// serve starts `noticesd serve` with env on a free port and waits until
// /health answers 200.
func serve(t *testing.T, bin string, env []string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{stderr: &testbin.LockedBuffer{}, base: "http://" + addr}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(append(os.Environ(), env...), "NOTICES_ADDR="+addr)
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) || s.cmd.ProcessState != nil {
			t.Fatalf("serve did not become healthy: %v\n%s", err, s.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// do makes a request and returns the status and body.
func (s *server) do(t *testing.T, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", method, path, err, s.stderr.String())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// get makes a request that must answer want and decodes the answer.
func (s *server) get(t *testing.T, method, path, key string, body any, want int, out any) {
	t.Helper()
	code, data := s.do(t, method, path, key, body)
	if code != want {
		t.Fatalf("%s %s = %d %s; want %d", method, path, code, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

type keys struct {
	AccountID  string `json:"account_id"`
	AccountKey string `json:"account_key"`
	ReadKey    string `json:"read_key"`
}

func createAccount(t *testing.T, bin string, env []string, plan string) keys {
	t.Helper()
	var k keys
	if err := json.Unmarshal(testbin.Run(t, bin, env, "accounts", "create", "--name", "Scale "+plan, "--plan", plan), &k); err != nil {
		t.Fatal(err)
	}
	return k
}

type noticeJSON struct {
	ID  string  `json:"id"`
	Seq int64   `json:"notice_seq"`
	ACN *string `json:"acn"`
	ABN *string `json:"abn"`
}

type page struct {
	Data    []noticeJSON `json:"data"`
	Total   int64        `json:"total"`
	HasMore bool         `json:"has_more"`
}

func ids(ns []noticeJSON) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.ID
	}
	return out
}

// scaleEnv is the environment of a scale-mode process in namespace ns.
func scaleEnv(t *testing.T, ns string) []string {
	return []string{"NOTICES_BACKEND=scale", "NOTICES_ELASTICSEARCH_URL=" + testservers.Elasticsearch(t),
		"NOTICES_REDIS_URL=" + testservers.Redis(t), "NOTICES_NAMESPACE=" + ns, "NOTICES_WEBHOOKS=off",
		"NOTICES_SOURCE=none", "NOTICES_LOG_LEVEL=error", "NOTICES_DATA_DIR=" + t.TempDir()}
}

// TestScaleModeAPI loads one sample into scale mode and into an embedded
// server and checks that every read route answers the same, then runs two
// scale replicas on one namespace.
func TestScaleModeAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and loads a sample into live servers")
	}
	bin := testbin.Build(t)
	data := t.TempDir()
	// A fixed end date: the same sample on every run (without --now it
	// ends at the current second).
	testbin.Run(t, bin, nil, "sample", "--notices", "3000", "--companies", "6000", "--now", "2026-11-20", "--out", data)
	files, _ := filepath.Glob(filepath.Join(data, "*"))
	var noticesFile, registerFile string
	for _, f := range files {
		switch {
		case strings.Contains(f, "notices"):
			noticesFile = f
		case strings.Contains(f, "register"):
			registerFile = f
		}
	}
	if noticesFile == "" || registerFile == "" {
		t.Fatalf("sample wrote %v", files)
	}
	ns := testservers.Namespace(t)
	senv := scaleEnv(t, ns)
	eenv := []string{"NOTICES_DATA_DIR=" + t.TempDir(), "NOTICES_WEBHOOKS=off", "NOTICES_SOURCE=none", "NOTICES_LOG_LEVEL=error"}
	for _, env := range [][]string{senv, eenv} {
		testbin.Run(t, bin, env, "ingest", "--quiet", "register", registerFile)
		testbin.Run(t, bin, env, "ingest", "--quiet", "notices", noticesFile)
	}
	sk := createAccount(t, bin, senv, "standard")
	ek := createAccount(t, bin, eenv, "standard")
	a := serve(t, bin, senv)
	b := serve(t, bin, senv)
	e := serve(t, bin, eenv)

	var health struct {
		Status string `json:"status"`
		Checks map[string]string
		Index  struct {
			Notices int64 `json:"notices"`
		} `json:"index"`
		Search *struct {
			Cluster string `json:"cluster"`
			Indices []struct {
				Alias          string `json:"alias"`
				Index          string `json:"index"`
				MappingVersion int    `json:"mapping_version"`
				Docs           int64  `json:"docs"`
			} `json:"indices"`
			NewestAgeSeconds *float64 `json:"newest_age_seconds"`
		} `json:"search"`
	}
	a.get(t, "GET", "/health", "", nil, 200, &health)
	if health.Status != "ok" || health.Checks["search"] != "ok" || health.Checks["store"] != "ok" || health.Index.Notices != 3000 {
		t.Errorf("scale /health: %+v", health)
	}
	// The search block: cluster status, each alias's index with the
	// mappings/ version it was made from and its count, the newest
	// notice's age (issue: /health shows index versions and counts).
	if sh := health.Search; sh == nil || sh.Cluster == "" || len(sh.Indices) != 2 || sh.NewestAgeSeconds == nil || *sh.NewestAgeSeconds < 0 {
		t.Errorf("scale /health search block: %+v", sh)
	} else {
		for _, ix := range sh.Indices {
			kind := ix.Alias[strings.LastIndex(ix.Alias, "-")+1:]
			def, err := mappings.Load(kind)
			if err != nil {
				t.Errorf("index %+v: %v", ix, err)
				continue
			}
			if ix.MappingVersion != def.Version || !strings.HasPrefix(ix.Index, ix.Alias+"-v") || ix.Docs <= 0 {
				t.Errorf("index %+v; want mapping version %d behind %s, with documents", ix, def.Version, ix.Alias)
			}
			if kind == mappings.Notices && ix.Docs != 3000 {
				t.Errorf("notices index holds %d documents, want 3000", ix.Docs)
			}
		}
	}

	// Companies to screen and watch: the first notices' identifiers.
	var first page
	e.get(t, "GET", "/v1/notices?limit=50&include_deregistration=true", ek.ReadKey, nil, 200, &first)
	var acns, abns []string
	for _, n := range first.Data {
		if n.ACN != nil {
			acns = append(acns, *n.ACN)
		}
		if n.ABN != nil {
			abns = append(abns, *n.ABN)
		}
	}
	if len(acns) < 5 || len(abns) < 2 {
		t.Fatalf("the sample's first notices carry too few identifiers: %d ACNs, %d ABNs", len(acns), len(abns))
	}

	t.Run("read routes answer as embedded", func(t *testing.T) {
		searches := []string{
			"limit=20",
			"q=liquidator&limit=50&sort=published_desc",
			"q=" + url.QueryEscape(`"creditors voluntary" OR administrat* -receiver`) + "&limit=50&sort=published_asc",
			"state=VIC,NSW&limit=100&page=3",
			"include_deregistration=true&sort=published_asc&limit=100&page=5",
			"from=2026-01-01&to=2026-06-30&limit=100",
			"notice_purpose=Appointment&state=QLD&limit=100",
			"company=" + acns[0],
			"company=" + abns[0],
			"q=deed&state=VIC&limit=100&sort=published_asc",
			"q=creditors&limit=100&page=2&sort=published_desc",
			"appointment_type=" + url.QueryEscape("Creditors' Voluntary Liquidation") + "&limit=100",
		}
		for _, qs := range searches {
			var sp, ep page
			a.get(t, "GET", "/v1/notices?"+qs, sk.ReadKey, nil, 200, &sp)
			e.get(t, "GET", "/v1/notices?"+qs, ek.ReadKey, nil, 200, &ep)
			if sp.Total != ep.Total || sp.HasMore != ep.HasMore || !reflect.DeepEqual(ids(sp.Data), ids(ep.Data)) || len(sp.Data) != len(ep.Data) {
				t.Errorf("/v1/notices?%s: scale total %d %v, embedded total %d %v", qs, sp.Total, ids(sp.Data), ep.Total, ids(ep.Data))
			}
			if ep.Total == 0 && !strings.Contains(qs, "company=") {
				t.Errorf("/v1/notices?%s finds nothing: the comparison proves little", qs)
			}
		}
		// Relevance: BM25 in Elasticsearch and FTS5 may order equal-looking
		// matches differently (docs/elasticsearch.md); the same notices.
		var sIDs, eIDs []string
		for pg := 1; pg <= 4; pg++ {
			var sr, er page
			a.get(t, "GET", fmt.Sprintf("/v1/notices?q=liquidator&limit=100&page=%d", pg), sk.ReadKey, nil, 200, &sr)
			e.get(t, "GET", fmt.Sprintf("/v1/notices?q=liquidator&limit=100&page=%d", pg), ek.ReadKey, nil, 200, &er)
			sIDs, eIDs = append(sIDs, ids(sr.Data)...), append(eIDs, ids(er.Data)...)
		}
		if s1, s2 := sorted(sIDs), sorted(eIDs); len(s2) == 0 || !reflect.DeepEqual(s1, s2) {
			t.Errorf("q=liquidator by relevance: scale %d notices, embedded %d, or different ones", len(s1), len(s2))
		}
		// A notice by id: the same notice (collected_at is the loading
		// process's clock, so it differs).
		for _, n := range first.Data[:5] {
			sn, en := map[string]any{}, map[string]any{}
			a.get(t, "GET", "/v1/notices/"+n.ID, sk.ReadKey, nil, 200, &sn)
			e.get(t, "GET", "/v1/notices/"+n.ID, ek.ReadKey, nil, 200, &en)
			delete(sn, "collected_at")
			delete(en, "collected_at")
			if !reflect.DeepEqual(sn, en) {
				t.Errorf("notice %s: scale %v, embedded %v", n.ID, sn, en)
			}
		}
		// Companies by ACN and ABN: same company data and notices. Some
		// may be notices-only companies (no register rows); at least one
		// must have them, or the comparison proves little.
		withRegister := 0
		for _, id := range append(acns[:5:5], abns[:2]...) {
			var sc, ec struct {
				ACN         *string         `json:"acn"`
				ABN         *string         `json:"abn"`
				Name        string          `json:"name"`
				NoticeCount int             `json:"notice_count"`
				Register    json.RawMessage `json:"register"`
				Notices     []noticeJSON    `json:"notices"`
			}
			a.get(t, "GET", "/v1/companies/"+id, sk.ReadKey, nil, 200, &sc)
			e.get(t, "GET", "/v1/companies/"+id, ek.ReadKey, nil, 200, &ec)
			if !reflect.DeepEqual(ids(sc.Notices), ids(ec.Notices)) || deref(sc.ACN)+deref(sc.ABN)+sc.Name != deref(ec.ACN)+deref(ec.ABN)+ec.Name ||
				sc.NoticeCount != ec.NoticeCount || !jsonEqual(sc.Register, ec.Register) {
				t.Errorf("company %s differs:\nscale    %s %s %s %d notices %v register %s\nembedded %s %s %s %d notices %v register %s", id,
					deref(sc.ACN), deref(sc.ABN), sc.Name, sc.NoticeCount, ids(sc.Notices), sc.Register,
					deref(ec.ACN), deref(ec.ABN), ec.Name, ec.NoticeCount, ids(ec.Notices), ec.Register)
			}
			if len(ec.Register) >= 10 {
				withRegister++
			}
		}
		if withRegister == 0 {
			t.Errorf("none of the companies compared has register rows: the comparison proves little")
		}
		if code, _ := a.do(t, "GET", "/v1/companies/123456780", sk.ReadKey, nil); code != 404 {
			t.Errorf("unknown company: %d, want 404", code)
		}
		// Filters and stats: the same JSON.
		for _, path := range []string{"/v1/filters", "/v1/filters?q=liquidator", "/v1/filters?state=VIC",
			"/v1/stats", "/v1/stats?group_by=state", "/v1/stats?group_by=notice_purpose&q=creditors",
			"/v1/stats?group_by=month&from=2025-01-01&to=2026-12-31", "/v1/stats?group_by=appointment_type&include_deregistration=true"} {
			_, sb := a.do(t, "GET", path, sk.ReadKey, nil)
			_, eb := e.do(t, "GET", path, ek.ReadKey, nil)
			if !jsonEqual(sb, eb) {
				t.Errorf("%s: scale %s\nembedded %s", path, sb, eb)
			}
		}
		// The bulk screen: the same three lists.
		screen := map[string]any{"identifiers": append(append(append([]string{}, acns...), abns...), "123456780", "004085616")}
		_, sb := a.do(t, "POST", "/v1/match", sk.AccountKey, screen)
		_, eb := e.do(t, "POST", "/v1/match", ek.AccountKey, screen)
		if !jsonEqual(sb, eb) {
			t.Errorf("POST /v1/match: scale %s\nembedded %s", sb, eb)
		}
		filtered := map[string]any{"identifiers": acns, "filters": map[string]any{"state": []string{"VIC"}}}
		_, sb = a.do(t, "POST", "/v1/match", sk.AccountKey, filtered)
		_, eb = e.do(t, "POST", "/v1/match", ek.AccountKey, filtered)
		if !jsonEqual(sb, eb) {
			t.Errorf("POST /v1/match with filters: scale %s\nembedded %s", sb, eb)
		}
	})

	var watchID string
	t.Run("watches across replicas", func(t *testing.T) {
		body := map[string]any{"name": "book", "identifiers": acns[:3]}
		var sw, ew struct {
			ID          string   `json:"id"`
			Identifiers []string `json:"identifiers"`
			Unresolved  []string `json:"unresolved"`
		}
		a.get(t, "POST", "/v1/watches", sk.AccountKey, body, 201, &sw)
		e.get(t, "POST", "/v1/watches", ek.AccountKey, body, 201, &ew)
		watchID = sw.ID
		// Seen by the other replica at once.
		var got struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		b.get(t, "GET", "/v1/watches/"+sw.ID, sk.AccountKey, nil, 200, &got)
		if got.ID != sw.ID || !reflect.DeepEqual(sw.Unresolved, ew.Unresolved) {
			t.Errorf("watch through the other replica: %+v (unresolved %v, embedded %v)", got, sw.Unresolved, ew.Unresolved)
		}
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		b.get(t, "GET", "/v1/watches", sk.AccountKey, nil, 200, &list)
		if len(list.Data) != 1 || list.Data[0].ID != sw.ID {
			t.Errorf("list through the other replica: %+v", list)
		}
		// Matches: the same notices as embedded, through either replica.
		var sm, bm, em struct {
			Data      []noticeJSON `json:"data"`
			NextSince int64        `json:"next_since"`
		}
		a.get(t, "GET", "/v1/watches/"+sw.ID+"/matches?since=0&limit=500", sk.AccountKey, nil, 200, &sm)
		b.get(t, "GET", "/v1/watches/"+sw.ID+"/matches?since=0&limit=500", sk.AccountKey, nil, 200, &bm)
		e.get(t, "GET", "/v1/watches/"+ew.ID+"/matches?since=0&limit=500", ek.AccountKey, nil, 200, &em)
		if len(em.Data) == 0 || !reflect.DeepEqual(ids(sm.Data), ids(em.Data)) || !reflect.DeepEqual(ids(bm.Data), ids(em.Data)) {
			t.Errorf("matches: scale %v / %v, embedded %v", ids(sm.Data), ids(bm.Data), ids(em.Data))
		}
		// PATCH through one, seen by the other; DELETE of a second watch.
		a.get(t, "PATCH", "/v1/watches/"+sw.ID, sk.AccountKey, map[string]any{"name": "renamed"}, 200, nil)
		b.get(t, "GET", "/v1/watches/"+sw.ID, sk.AccountKey, nil, 200, &got)
		if got.Name != "renamed" {
			t.Errorf("after PATCH through A, B reads name %q", got.Name)
		}
		var tmp struct {
			ID string `json:"id"`
		}
		b.get(t, "POST", "/v1/watches", sk.AccountKey, map[string]any{"identifiers": acns[3:4]}, 201, &tmp)
		a.get(t, "DELETE", "/v1/watches/"+tmp.ID, sk.AccountKey, nil, 204, nil)
		if code, _ := b.do(t, "GET", "/v1/watches/"+tmp.ID, sk.AccountKey, nil); code != 404 {
			t.Errorf("a watch deleted through A answers %d through B, want 404", code)
		}
	})

	t.Run("quota across replicas", func(t *testing.T) {
		// 30 concurrent creates split over both replicas on a plan of 20
		// watches: exactly 20 are created, the rest refused as documented.
		std := createAccount(t, bin, senv, "standard")
		const n = 30
		var wg sync.WaitGroup
		codes := make([]int, n)
		bodies := make([]string, n)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				srv := []*server{a, b}[i%2]
				var raw []byte
				codes[i], raw = srv.do(t, "POST", "/v1/watches", std.AccountKey, map[string]any{"identifiers": []string{acns[i%len(acns)]}})
				bodies[i] = string(raw)
			}()
		}
		wg.Wait()
		created := 0
		for i, c := range codes {
			switch {
			case c == 201:
				created++
			case c == 402 && strings.Contains(bodies[i], "watch_limit_reached"):
			default:
				t.Errorf("create %d: %d %s", i, c, bodies[i])
			}
		}
		if created != 20 {
			t.Errorf("%d watches created on a 20-watch plan by %d concurrent creates over two replicas", created, n)
		}
		var list struct {
			Data []any `json:"data"`
		}
		b.get(t, "GET", "/v1/watches", std.AccountKey, nil, 200, &list)
		if len(list.Data) != 20 {
			t.Errorf("the account lists %d watches, want 20", len(list.Data))
		}
	})

	t.Run("webhooks on", func(t *testing.T) {
		// Registrations and delivery records live in Redis (deliveries are
		// made by `noticesd worker`, tested in test/e2e): serve registers,
		// lists and removes a webhook.
		on := serve(t, bin, append(append([]string{}, senv...), "NOTICES_WEBHOOKS=on", "NOTICES_SECRET_KEY="+config.DevelopmentSecretKey))
		code, body := on.do(t, "POST", "/v1/watches/"+watchID+"/webhook", sk.AccountKey, map[string]any{"url": "https://hooks.example.com/n"})
		if code != 201 || !strings.Contains(string(body), `"secret":"whsec_`) {
			t.Fatalf("webhook registration in scale mode: %d %s", code, body)
		}
		if code, body = on.do(t, "GET", "/v1/watches/"+watchID+"/deliveries", sk.AccountKey, nil); code != 200 || !strings.Contains(string(body), `"data":`) {
			t.Errorf("deliveries in scale mode: %d %s", code, body)
		}
		if code, body = on.do(t, "DELETE", "/v1/watches/"+watchID+"/webhook", sk.AccountKey, nil); code != 204 {
			t.Errorf("webhook removal in scale mode: %d %s", code, body)
		}
	})

	t.Run("filters and stats follow an ingest by another process", func(t *testing.T) {
		// Each replica keeps filters and stats answers (NOTICES_AGG_CACHE)
		// until the notices' data version moves on: the ingest process moves
		// it once its notices are searchable, so the next read through either
		// replica has them, with no wait.
		totals := func(srv *server) (filters, stats int64) {
			var f, st struct {
				Total int64 `json:"total"`
			}
			srv.get(t, "GET", "/v1/filters?state=VIC", sk.ReadKey, nil, 200, &f)
			srv.get(t, "GET", "/v1/stats?group_by=state", sk.ReadKey, nil, 200, &st)
			return f.Total, st.Total
		}
		fa, sa := totals(a)
		totals(b)
		if f2, s2 := totals(a); f2 != fa || s2 != sa {
			t.Fatalf("the same reads twice: %d/%d then %d/%d", fa, sa, f2, s2)
		}
		line := fmt.Sprintf(`{"source_id":"SCALE-CACHE-1","published_at":"%s","acn":"%s","company_name":"CACHED PTY LTD","notice_purpose":"Appointment","notice_type":"Appointment of liquidator","state":"VIC"}`+"\n",
			time.Now().UTC().Format(time.RFC3339), acns[len(acns)-1])
		path := filepath.Join(t.TempDir(), "cache.jsonl")
		if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		testbin.Run(t, bin, senv, "ingest", "--quiet", "notices", path)
		for name, srv := range map[string]*server{"A": a, "B": b} {
			if f, st := totals(srv); f != fa+1 || st != sa+1 {
				t.Errorf("replica %s after the ingest: filters total %d, stats total %d; want %d and %d", name, f, st, fa+1, sa+1)
			}
		}
		_, metrics := a.do(t, "GET", "/metrics", "", nil)
		if !strings.Contains(string(metrics), `noticesd_agg_cache_reads_total{outcome="hit"}`) ||
			strings.Contains(string(metrics), `noticesd_agg_cache_reads_total{outcome="hit"} 0`+"\n") {
			t.Errorf("replica A's /metrics shows no answer served from its cache:\n%s", grepLines(string(metrics), "agg_cache"))
		}
	})

	t.Run("a notice ingested while serving is matched", func(t *testing.T) {
		if watchID == "" {
			t.Skip("no watch (an earlier subtest failed)")
		}
		line := fmt.Sprintf(`{"source_id":"SCALE-LIVE-1","published_at":"%s","acn":"%s","company_name":"LIVE PTY LTD","notice_purpose":"Appointment","notice_type":"Appointment of liquidator","state":"VIC"}`+"\n",
			time.Now().UTC().Format(time.RFC3339), acns[0])
		path := filepath.Join(t.TempDir(), "live.jsonl")
		if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
		testbin.Run(t, bin, senv, "ingest", "--quiet", "notices", path)
		var found bool
		for i := 0; i < 100 && !found; i++ {
			srv := []*server{a, b}[i%2]
			var m struct {
				Data []noticeJSON `json:"data"`
			}
			srv.get(t, "GET", "/v1/watches/"+watchID+"/matches?since=0&limit=500", sk.AccountKey, nil, 200, &m)
			for _, n := range m.Data {
				found = found || n.ID == notice.IDFor("SCALE-LIVE-1")
			}
			if !found {
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !found {
			t.Error("the notice ingested while serving never appeared in the watch's matches")
		}
	})

	t.Run("namespaces are isolated", func(t *testing.T) {
		other := scaleEnv(t, testservers.Namespace(t))
		ok := createAccount(t, bin, other, "standard")
		c := serve(t, bin, other)
		var p page
		c.get(t, "GET", "/v1/notices?include_deregistration=true", ok.ReadKey, nil, 200, &p)
		if p.Total != 0 {
			t.Errorf("an empty namespace sees %d notices", p.Total)
		}
		if code, _ := c.do(t, "GET", "/v1/notices", sk.ReadKey, nil); code != 401 {
			t.Errorf("a key of another namespace: %d, want 401", code)
		}
		if code, _ := a.do(t, "GET", "/v1/notices", ok.ReadKey, nil); code != 401 {
			t.Errorf("the new namespace's key on the first: %d, want 401", code)
		}
		var list struct {
			Data []any `json:"data"`
		}
		c.get(t, "GET", "/v1/watches", ok.AccountKey, nil, 200, &list)
		if len(list.Data) != 0 {
			t.Errorf("a new namespace lists %d watches", len(list.Data))
		}
	})
}

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// jsonEqual compares two JSON documents by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
