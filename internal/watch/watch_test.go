package watch

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
)

func fixedWatch() Watch {
	url := "https://hooks.example.com/notices"
	return Watch{
		ID:                "wch_test",
		AccountID:         "acc_secret",
		Name:              "Key suppliers",
		Active:            false,
		DeactivatedReason: "10 consecutive failed notices; last error HTTP 502",
		Identifiers:       []string{"000000019", "51824753556"},
		Unresolved:        []string{"51824753556"},
		Filters:           Filters{AppointmentType: []string{"Court Liquidation"}, State: []string{"NSW"}},
		WebhookURL:        &url,
		CreatedAt:         time.Date(2026, 11, 21, 3, 4, 5, 123e6, time.UTC),
		UpdatedAt:         time.Date(2026, 11, 21, 15, 0, 0, 0, time.FixedZone("AEDT", 11*3600)),
	}
}

func TestWatchJSON(t *testing.T) {
	tests := []struct {
		name   string
		value  any
		golden string
	}{
		{"full view", fixedWatch(), "testdata/watch.golden.json"},
		{"list view", fixedWatch().Summary(), "testdata/summary.golden.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(tt.golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, bytes.TrimSpace(want)) {
				t.Errorf("got  %s\nwant %s", got, want)
			}
		})
	}
}

func TestWatchJSONActive(t *testing.T) {
	w := Watch{ID: "wch_x", Active: true, DeactivatedReason: "stale", Filters: Filters{Q: "smith"}}
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["deactivated_reason"]; ok {
		t.Errorf("deactivated_reason shown on an active watch: %s", b)
	}
	for _, k := range []string{"identifiers", "unresolved"} {
		if v, ok := m[k].([]any); !ok || len(v) != 0 {
			t.Errorf("%s = %v, want []", k, m[k])
		}
	}
	if m["webhook_url"] != nil || m["alert_email"] != nil || m["identifier_count"] != 0.0 {
		t.Errorf("want null webhook_url and alert_email, identifier_count 0: %s", b)
	}
	if _, ok := m["account_id"]; ok {
		t.Errorf("account id leaked: %s", b)
	}
}

func TestNew(t *testing.T) {
	email := "a@example.com"
	req := CreateRequest{
		Identifiers: []ident.ID{{Value: "123456789", Kind: ident.ACN}, {Value: "12123456789", Kind: ident.ABN}},
		Name:        "n",
		AlertEmail:  &email,
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC)
	w := New(req, "acc_1", now)
	if !w.Active || w.AccountID != "acc_1" || w.Name != "n" || w.AlertEmail != &email {
		t.Errorf("watch = %+v", w)
	}
	if len(w.Identifiers) != 2 || w.Identifiers[1] != "12123456789" {
		t.Errorf("identifiers = %v", w.Identifiers)
	}
	want := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)
	if !w.CreatedAt.Equal(want) || !w.UpdatedAt.Equal(want) {
		t.Errorf("timestamps %v %v, want %v", w.CreatedAt, w.UpdatedAt, want)
	}
}

func TestApply(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	email := "x@example.com"
	name := "renamed"
	tests := []struct {
		name       string
		start      Watch
		patch      Patch
		wantActive bool
		wantReason string
	}{
		{"deactivate by hand", Watch{Active: true}, Patch{Active: boolPtr(false)}, false, ManualDeactivationReason},
		{"deactivating again keeps the reason", Watch{DeactivatedReason: "10 failures"}, Patch{Active: boolPtr(false)}, false, "10 failures"},
		{"reactivate clears the reason", Watch{DeactivatedReason: "10 failures"}, Patch{Active: boolPtr(true)}, true, ""},
		{"name only leaves active", Watch{Active: true}, Patch{Name: &name}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.start
			w.AlertEmail = &email
			w.Apply(tt.patch, now)
			if w.Active != tt.wantActive || w.DeactivatedReason != tt.wantReason || !w.UpdatedAt.Equal(now) {
				t.Errorf("after apply: active %v reason %q updated %v", w.Active, w.DeactivatedReason, w.UpdatedAt)
			}
			if w.AlertEmail == nil {
				t.Error("alert_email cleared though not in the patch")
			}
		})
	}
	t.Run("clear email and set name", func(t *testing.T) {
		w := Watch{Active: true, AlertEmail: &email, Name: "old"}
		w.Apply(Patch{AlertEmailSet: true, Name: &name}, now)
		if w.AlertEmail != nil || w.Name != "renamed" {
			t.Errorf("got %+v", w)
		}
	})
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^wch_[a-z2-7]{26}$`)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := NewID()
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("id %q malformed or repeated", id)
		}
		seen[id] = true
	}
}
