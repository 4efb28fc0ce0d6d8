package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// TestFailedAttemptLoggedAtWarn: a failed delivery attempt is one warn
// record with the watch, the delivery id, the attempt and the reason.
func TestFailedAttemptLoggedAtWarn(t *testing.T) {
	f := newFixWith(t, nil)
	var logs bytes.Buffer
	var err error
	if f.work, err = New(Config{Queue: f.st, Sender: f.sender, RetryUnit: unit, now: f.clock.Now,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	f.rcv.setStatus(func(int) int { return http.StatusBadGateway })
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	f.dispatch()
	f.attempt()
	var rec map[string]any
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("log %q is not one JSON record: %v", logs.String(), err)
	}
	d := f.records(w)[0]
	want := map[string]any{"level": "WARN", "msg": "delivery attempt failed", "watch": w, "delivery": d.ID, "attempt": 1.0, "reason": "HTTP 502"}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("log %s = %v, want %v (record %v)", k, rec[k], v, rec)
		}
	}
}

// unsignable is a queue whose webhook secret cannot be read.
type unsignable struct{ *sqlite.Store }

func (unsignable) Signing(context.Context, store.Job) (string, string, error) {
	return "", "", errors.New("the secret cannot be opened")
}

// TestAttemptNotMadeLoggedAtWarn: an attempt not sent (its secret
// unreadable) is one warn record with the watch, the delivery id, the
// attempt and the error, as in scale mode.
func TestAttemptNotMadeLoggedAtWarn(t *testing.T) {
	f := newFixWith(t, nil)
	var logs bytes.Buffer
	work, err := New(Config{Queue: unsignable{f.st}, Sender: f.sender, RetryUnit: unit, now: f.clock.Now,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w := f.watch(watchA)
	f.hook(w)
	f.ingest(0, acnA)
	f.dispatch()
	if n, err := work.runOnce(f.ctx); n != 1 || err == nil {
		t.Fatalf("runOnce = %d, %v; want one attempt not made", n, err)
	}
	var rec map[string]any
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("log %q is not one JSON record: %v", logs.String(), err)
	}
	d := f.records(w)[0]
	want := map[string]any{"level": "WARN", "msg": "delivery attempt not made", "watch": w, "delivery": d.ID, "attempt": 1.0}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("log %s = %v, want %v (record %v)", k, rec[k], v, rec)
		}
	}
	if e, _ := rec["err"].(string); !strings.Contains(e, "the secret cannot be opened") {
		t.Errorf("log err = %q, want the Signing error", e)
	}
}
