package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/scale"
	"github.com/noticesd/noticesd/internal/testservers"
)

// TestScaleCLI: ingest notices and the register into Elasticsearch, then
// reindex, through the CLI in scale mode; the data reads back the same.
func TestScaleCLI(t *testing.T) {
	_, st := scaleEnv(t)
	ctx := context.Background()
	// Line 2 has a notice_code longer than Elasticsearch indexes as one
	// keyword (32,766 bytes). Ingest rejects it before the node sees it, as
	// the embedded store does, and loads the other lines (the node's own
	// refusals are reported by line too: internal/store/scale).
	huge := filepath.Join(t.TempDir(), "huge.jsonl")
	lines := `{"source_id":"H1","published_at":"2026-11-20T01:00:00Z","acn":"004085616","company_name":"ACME PTY LTD","notice_purpose":"Appointment","state":"VIC"}` + "\n" +
		`{"source_id":"H2","published_at":"2026-11-20T01:00:00Z","company_name":"HUGE PTY LTD","notice_code":"` + strings.Repeat("X", 40000) + `","state":"VIC"}` + "\n" +
		`{"source_id":"H3","published_at":"2026-11-20T02:00:00Z","company_name":"THIRD PTY LTD","state":"NSW"}` + "\n"
	if err := os.WriteFile(huge, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name     string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"notices", []string{"ingest", "notices", "../../ingest/testdata/notices.jsonl"}, 0, "inserted 5", ""},
		{"notices again update", []string{"ingest", "notices", "../../ingest/testdata/notices.jsonl"}, 0, "inserted 0 updated 5", ""},
		{"broken lines reported", []string{"ingest", "notices", "../../ingest/testdata/broken.jsonl"}, 3, "rejected", "broken.jsonl:"},
		{"oversized value rejected by line", []string{"ingest", "notices", huge}, 3, "inserted 2 updated 0 rejected 1", "huge.jsonl:2: notice_code is 40000 bytes long"},
		{"register", []string{"ingest", "register", "../../ingest/testdata/register.tsv"}, 0, "inserted", ""},
		{"reindex", []string{"reindex"}, 0, "notices:", ""},
		{"reindex takes no args", []string{"reindex", "x"}, 2, "", "no arguments"},
	}
	for _, s := range steps {
		var stdout, stderr bytes.Buffer
		code := run(s.args, &stdout, &stderr)
		if code != s.code || !strings.Contains(stdout.String(), s.inStdout) || !strings.Contains(stderr.String(), s.inStderr) {
			t.Fatalf("%s: exit %d (want %d)\nstdout: %s\nstderr: %s", s.name, code, s.code, stdout.String(), stderr.String())
		}
	}
	page, err := st.Elastic.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedAsc, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total < 5 {
		t.Errorf("after ingest and reindex %d notices, want at least 5", page.Total)
	}
	var withACN *string
	for _, n := range page.Notices {
		if n.ACN != nil {
			withACN = n.ACN
		}
	}
	if withACN == nil {
		t.Fatal("no notice with an ACN in the test data")
	}
	if _, err := st.Elastic.Company(ctx, ident.ID{Value: *withACN, Kind: ident.ACN}); err != nil {
		t.Errorf("company %s after reindex: %v", *withACN, err)
	}
}

// scaleEnv points the environment at the test servers in scale mode under
// a namespace of the test's own, and opens that namespace; its indices and
// keys are dropped when the test ends.
func scaleEnv(t *testing.T) (config.Config, *scale.Store) {
	t.Helper()
	return scaleEnvOn(t, "NOTICES_REDIS_URL", testservers.Redis(t))
}

// scaleEnvOn is scaleEnv with Redis named by setting (NOTICES_REDIS_URL or
// NOTICES_REDIS_CLUSTER_URL) = url.
func scaleEnvOn(t *testing.T, setting, url string) (config.Config, *scale.Store) {
	t.Helper()
	t.Setenv("NOTICES_BACKEND", "scale")
	t.Setenv("NOTICES_ELASTICSEARCH_URL", testservers.Elasticsearch(t))
	t.Setenv(setting, url)
	t.Setenv("NOTICES_NAMESPACE", testservers.Namespace(t))
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	st, err := openScale(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Elastic.Drop(context.Background()); err != nil {
			t.Errorf("drop: %v", err)
		}
		keys, _ := st.Client().Keys(context.Background(), cfg.Namespace+":*").Result()
		if len(keys) > 0 {
			st.Client().Del(context.Background(), keys...)
		}
		st.Close()
	})
	return cfg, st
}

// TestWarnWithoutAOF: serve and worker warn when Redis keeps no
// append-only file, and say nothing when it does.
func TestWarnWithoutAOF(t *testing.T) {
	rdb, err := redisstore.Dial(config.Config{RedisURL: testservers.Redis(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	v, err := rdb.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		t.Fatalf("the test Redis refuses CONFIG GET: %v", err)
	}
	var logs bytes.Buffer
	warnWithoutAOF(ctx, rdb, slog.New(slog.NewTextHandler(&logs, nil)))
	warned := strings.Contains(logs.String(), "appendonly no")
	if want := v["appendonly"] == "no"; warned != want {
		t.Fatalf("appendonly %q: warned %v, want %v (log %q)", v["appendonly"], warned, want, logs.String())
	}
}

// TestScaleServeRunsSweeper: a scale-mode serve runs the store's Sweeper,
// so a watch create a dead replica left half made stops counting against
// its plan within seconds (redisstore.TestSweeperUndoesDeadCreate), not at
// the worker's next Reconcile.
func TestScaleServeRunsSweeper(t *testing.T) {
	cfg, st := scaleEnv(t)
	cfg.Source = "" // no collector
	ctx := context.Background()
	var started []part
	start := func(p part) error {
		if err := p.Start(ctx); err != nil {
			return err
		}
		started = append(started, p)
		return nil
	}
	if err := wireScaleParts(ctx, cfg, st, slog.New(slog.DiscardHandler), &api.Deps{}, start); err != nil {
		t.Fatal(err)
	}
	sweepers := 0
	for i := len(started) - 1; i >= 0; i-- {
		if _, ok := started[i].(*redisstore.Sweeper); ok {
			sweepers++
		}
		if err := started[i].Shutdown(ctx); err != nil {
			t.Errorf("shutdown %T: %v", started[i], err)
		}
	}
	if sweepers != 1 {
		t.Fatalf("serve started %d sweepers of stalled creates (parts %T); want 1", sweepers, started)
	}
}
