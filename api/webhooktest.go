package api

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/webhook"
)

// webhookTestResult is the body of POST /v1/watches/{id}/webhook/test: the
// outcome of the one test attempt.
type webhookTestResult struct {
	// Type is webhook.TestEventType, the type the body sent carried.
	Type string `json:"type"`
	// DeliveryID is the X-Notices-Delivery id sent (a fresh dlv_test_ id).
	DeliveryID string `json:"delivery_id"`
	// WebhookURL is where the request went.
	WebhookURL string `json:"webhook_url"`
	// OK is true when the endpoint answered with any 2xx.
	OK bool `json:"ok"`
	// StatusCode is the HTTP status received, null when none was.
	StatusCode *int `json:"status_code"`
	// Error is the failure in the form of a delivery's last_error, null
	// on success.
	Error *string `json:"error"`
	// SentAt is the delivered_at of the body sent.
	SentAt string `json:"sent_at"`
	// DurationMS is how long the request took, from sending it to the end
	// of the answer (or the failure), in milliseconds.
	DurationMS int64 `json:"duration_ms"`
}

// testSlotWait bounds how long a test delivery waits for one of its
// endpoint's slots (webhook.DefaultPerHost test requests at once per
// endpoint and process) before it is answered 429 rate_limited. A
// variable for tests only.
var testSlotWait = 5 * time.Second

// testWebhook is POST /v1/watches/{id}/webhook/test: one signed request of
// type webhook.TestEventType to the watch's webhook, made while the client
// waits, answered 200 with its outcome whatever the endpoint answered.
// It is signed, sent and checked (https only, the dial-time address
// check, no redirects, the delivery timeout, 64 KiB read) exactly as a
// notice delivery is, by a webhook.Sender of its own, and recorded
// nowhere: no delivery record, no failure count, no attempt metric.
// Bounded as a heavy request (the account's and the service's heavy slots,
// limits.go) and by the endpoint's slots. A request body is ignored.
// Checks after authentication: webhook_unavailable, the watch (404),
// no_webhook (409).
func (s *Server) testWebhook(c *fiber.Ctx) error {
	hooks, err := s.webhooks()
	if err != nil {
		return err
	}
	sender := s.deps.TestSender
	if sender == nil {
		return errs.New(errs.ServerError, "no test delivery sender configured (api.Deps.TestSender is nil)")
	}
	p, _ := principal(c)
	id := pathParam(c, "id")
	url, secret, err := hooks.WebhookTarget(c.UserContext(), p.Account.ID, id)
	if err != nil {
		return err
	}
	out := webhookTestResult{Type: webhook.TestEventType, DeliveryID: webhook.NewTestDeliveryID(), WebhookURL: url}
	var began time.Time
	sentAt := s.deps.Now()
	res := sender.Send(c.UserContext(), webhook.Request{
		URL: url, DeliveryID: out.DeliveryID, Secret: secret, SlotWait: testSlotWait,
		Build: func() ([]byte, error) {
			began, sentAt = time.Now(), s.deps.Now()
			return webhook.TestEventPayload(id, sentAt)
		},
	})
	if errors.Is(res.NotSent, webhook.ErrEndpointBusy) {
		return errs.New(errs.RateLimited, "%s already has as many requests in flight from this server as it may (%d); retry the test in a few seconds", errs.Quote(url), webhook.DefaultPerHost)
	}
	if res.NotSent != nil {
		return res.NotSent
	}
	if !began.IsZero() {
		out.DurationMS = time.Since(began).Milliseconds()
	}
	out.OK, out.SentAt = res.OK, notice.Timestamp(sentAt)
	if res.StatusCode != 0 {
		out.StatusCode = &res.StatusCode
	}
	if !res.OK {
		out.Error = &res.LastError
	}
	return writeJSON(c, fiber.StatusOK, out)
}

// retryDelivery is POST /v1/watches/{id}/deliveries/{dlv}/retry: a dead
// delivery becomes pending again under the same id, its attempts counted
// from 0 (store.Webhooks.RetryDelivery), and is sent as soon as the
// delivery worker takes it. 202 with the delivery record. Checks after
// authentication: webhook_unavailable, the watch and the delivery (404),
// delivery_not_dead (409), no_webhook (409). A request body is ignored.
func (s *Server) retryDelivery(c *fiber.Ctx) error {
	hooks, err := s.webhooks()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	id := pathParam(c, "id")
	r, err := hooks.RetryDelivery(c.UserContext(), p.Account.ID, id, pathParam(c, "dlv"), s.deps.Now())
	if err != nil {
		return err
	}
	s.watchChanged(c, id)
	return writeJSON(c, fiber.StatusAccepted, r)
}
