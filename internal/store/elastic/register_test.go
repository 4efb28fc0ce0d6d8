package elastic

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/mappings"
)

// TestRegisterLoadSettings: a register load fills its new index with load
// settings (no periodic refresh, background translog syncs) and puts the
// mapping file's settings back before the alias moves to it, so the live
// register syncs every write and refreshes as configured.
func TestRegisterLoadSettings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	settingsOf := func(index string) map[string]any {
		t.Helper()
		var out map[string]struct {
			Settings struct {
				Index map[string]any `json:"index"`
			} `json:"settings"`
		}
		if err := s.do(ctx, s.cfg.Timeout, http.MethodGet, "/"+index+"/_settings?flat_settings=false", nil, &out); err != nil {
			t.Fatal(err)
		}
		return out[index].Settings.Index
	}
	l, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	index := l.(*RegisterLoad).Index()
	during := settingsOf(index)
	if during["refresh_interval"] != "-1" || during["translog"].(map[string]any)["durability"] != "async" {
		t.Errorf("during the load: refresh_interval %v, translog %v; want -1 and async", during["refresh_interval"], during["translog"])
	}
	if err := l.Add(ctx, storetest.RegisterRows()); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil || len(live) != 1 || live[0] != index {
		t.Fatalf("register alias points to %v (%v), want [%s]", live, err, index)
	}
	after := settingsOf(index)
	if _, ok := after["refresh_interval"]; ok {
		t.Errorf("after the load refresh_interval is %v, want the default (register.json sets none)", after["refresh_interval"])
	}
	if tl, _ := after["translog"].(map[string]any); tl != nil && tl["durability"] != "request" {
		t.Errorf("after the load translog durability is %v, want request", tl["durability"])
	}
	var count struct {
		Count int `json:"count"`
	}
	if err := s.do(ctx, s.cfg.Timeout, http.MethodGet, "/"+s.Alias(mappings.Register)+"/_count", nil, &count); err != nil {
		t.Fatal(err)
	}
	if count.Count != len(storetest.RegisterRows()) {
		t.Errorf("the committed register holds %d searchable rows, want %d", count.Count, len(storetest.RegisterRows()))
	}
}

// TestRegisterLoadRefusedRow: rows are sent in the background, so a row
// Elasticsearch refuses fails the load at Commit (or a later Add), named
// by its row number, and the old register stays.
func TestRegisterLoadRefusedRow(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	rows := storetest.RegisterRows()
	l, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	bad := rows[0]
	bad.ACN = strings.Repeat("9", 40000) // over Lucene's term limit: refused
	second := []notice.RegisterRow{rows[1], bad}
	err = l.Add(ctx, second)
	if err == nil {
		err = l.Commit(ctx)
	}
	want := "register row " + strconv.Itoa(len(rows)+2) + " "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("load with an oversized ACN: %v, want an error naming %q", err, want)
	}
	if err := l.Commit(ctx); err == nil {
		t.Error("a failed load committed on a second try")
	}
	if err := l.Rollback(); err != nil {
		t.Fatal(err)
	}
	live, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil || len(live) != 1 || live[0] == l.(*RegisterLoad).Index() {
		t.Errorf("register alias points to %v (%v) after a failed load", live, err)
	}
}

// TestStaleRegisterLoadDropped: a register load that was killed leaves its
// new index with no alias. The next load deletes such an index once it is
// older than staleLoadAge, and keeps a younger one (a load that may still
// be running) and the live register.
func TestStaleRegisterLoadDropped(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	ix, err := mappings.Load(mappings.Register)
	if err != nil {
		t.Fatal(err)
	}
	killed := s.indexName(ix, "killedload")
	if err := s.createIndex(ctx, ix, killed, "", loadSettings); err != nil {
		t.Fatal(err)
	}
	exists := func(index string) bool {
		t.Helper()
		err := s.do(ctx, s.cfg.Timeout, http.MethodHead, "/"+index, nil, nil)
		if err != nil && !isNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	live, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil || len(live) != 1 {
		t.Fatalf("register alias: %v, %v", live, err)
	}
	begin := func(s *Store) {
		t.Helper()
		l, err := s.BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
	begin(s)
	if !exists(killed) {
		t.Fatalf("a load deleted %s, an unaliased index created just now (a load that may still be running)", killed)
	}
	later := *s
	later.now = func() time.Time { return time.Now().Add(staleLoadAge + time.Minute) }
	begin(&later)
	if exists(killed) {
		t.Errorf("%s, left by a killed load over %s ago, is still there after the next load began", killed, staleLoadAge)
	}
	if !exists(live[0]) {
		t.Errorf("the live register index %s was deleted", live[0])
	}
}
