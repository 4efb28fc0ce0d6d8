package worker

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
)

// TestFailedAttemptLoggedAtWarn: a failed delivery attempt is one warn
// record with the watch, the delivery id, the attempt and the reason.
func TestFailedAttemptLoggedAtWarn(t *testing.T) {
	f := newFixWith(t, nil)
	var logs bytes.Buffer
	var err error
	if f.work, err = New(Config{Queue: f.st, Sender: f.sender, RetryUnit: unit, Now: f.clock.Now,
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
