package webhook

import (
	"crypto/rand"
	"encoding/json"
	"strings"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
)

// TestEventType is the "type" member of a test delivery's body (POST
// /v1/watches/{id}/webhook/test). A notice delivery has no "type" member
// and always a notice; a test delivery has this type and "notice": null.
const TestEventType = "webhook.test"

// TestDeliveryIDPrefix starts the X-Notices-Delivery id of every test
// delivery: a fresh id each time, never the id of a notice delivery.
const TestDeliveryIDPrefix = DeliveryIDPrefix + "test_"

// testPayload is the body of a test delivery, members in this order.
type testPayload struct {
	Type        string         `json:"type"`
	WatchID     string         `json:"watch_id"`
	DeliveredAt string         `json:"delivered_at"`
	Notice      *notice.Notice `json:"notice"`
}

// TestEventPayload returns the body of a test delivery:
// {"type": "webhook.test", "watch_id", "delivered_at", "notice": null},
// delivered_at in the service's timestamp form, like Payload's.
func TestEventPayload(watchID string, deliveredAt time.Time) ([]byte, error) {
	return json.Marshal(testPayload{Type: TestEventType, WatchID: watchID, DeliveredAt: notice.Timestamp(deliveredAt)})
}

// NewTestDeliveryID returns a fresh test delivery id: TestDeliveryIDPrefix
// and 26 random lowercase base32 characters.
func NewTestDeliveryID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return TestDeliveryIDPrefix + strings.ToLower(idEncoding.EncodeToString(b[:]))
}
