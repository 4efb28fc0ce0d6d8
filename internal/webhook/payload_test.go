package webhook

import (
	"bytes"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

func TestPayload(t *testing.T) {
	at := time.Date(2026, 11, 21, 3, 4, 5, 123456789, time.FixedZone("AEDT", 11*3600))
	body, err := Payload("wch_1", at, notice.Notice{ID: "ntc_a", Seq: 7})
	if err != nil {
		t.Fatal(err)
	}
	const prefix = `{"watch_id":"wch_1","delivered_at":"2026-11-20T16:04:05.123Z","notice":{"id":"ntc_a","notice_seq":7,`
	if len(body) < len(prefix) || string(body[:len(prefix)]) != prefix {
		t.Fatalf("Payload = %s\nwant prefix %s", body, prefix)
	}
	if want := `"practitioners":[]`; !bytes.Contains(body, []byte(want)) {
		t.Fatalf("Payload = %s, want %s (an array, never null)", body, want)
	}
}
