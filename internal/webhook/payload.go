package webhook

import (
	"encoding/json"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// payload is the delivery request body of SPEC.md, members in this order.
type payload struct {
	WatchID     string        `json:"watch_id"`
	DeliveredAt string        `json:"delivered_at"`
	Notice      notice.Notice `json:"notice"`
}

// Payload returns the body of one delivery attempt:
// {"watch_id", "delivered_at", "notice"}, with delivered_at in the service's
// timestamp form (RFC 3339 UTC, milliseconds). Build it anew for every
// attempt (delivered_at is the attempt's time) and sign exactly these bytes.
func Payload(watchID string, deliveredAt time.Time, n notice.Notice) ([]byte, error) {
	if n.Practitioners == nil {
		n.Practitioners = []notice.Practitioner{} // an array, never null
	}
	return json.Marshal(payload{WatchID: watchID, DeliveredAt: notice.Timestamp(deliveredAt), Notice: n})
}
