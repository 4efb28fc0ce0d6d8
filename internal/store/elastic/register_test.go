package elastic

import (
	"context"
	"net/http"
	"testing"

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
