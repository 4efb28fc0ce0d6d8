package api

import (
	"bytes"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/delivery"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/watch"
	"github.com/noticesd/noticesd/internal/webhook"
)

// Paging limits of GET /v1/watches/{id}/deliveries (SPEC.md "Limits").
const (
	DefaultDeliveriesLimit = 50
	MaxDeliveriesLimit     = 100
)

// MaxWebhookURLLength is the longest webhook URL accepted, in bytes: far
// above any real endpoint, and it keeps the watch object small.
const MaxWebhookURLLength = 2048

// webhookUnavailableMessage is the message of 500 webhook_unavailable. It is
// sent as is (unlike server_error's cause): the condition is a deliberate
// setting of the deployment, not a failure to hide.
const webhookUnavailableMessage = "webhook delivery is not configured on this deployment (NOTICES_WEBHOOKS=off); poll GET /v1/watches/{id}/matches instead, or ask the operator to enable webhooks"

// webhookRegistration is the webhook registration result of SPEC.md: the
// body of POST /v1/watches/{id}/webhook (201) and of .../webhook/rotate
// (200). The secret is shown only here; GET /v1/watches/{id} shows the URL
// but never the secret.
type webhookRegistration struct {
	ID         string `json:"id"`
	WebhookURL string `json:"webhook_url"`
	Secret     string `json:"secret"`
}

// deliveryList is the envelope of GET /v1/watches/{id}/deliveries.
type deliveryList struct {
	Data []delivery.Record `json:"data"`
}

// registerWebhook is POST /v1/watches/{id}/webhook with body {"url": ...}:
// registers the watch's webhook, or replaces the URL of an existing one, and
// issues a new secret either way (the old one stops verifying at once).
// Checks after authentication, in order: webhook_unavailable, empty_request,
// invalid_json, missing_url, invalid_webhook_url, then the watch (404).
// Members other than url are ignored. 201 with the registration result.
func (s *Server) registerWebhook(c *fiber.Ctx) error {
	hooks, err := s.webhooks()
	if err != nil {
		return err
	}
	body, err := s.requestBody(c)
	if err != nil {
		return err
	}
	url, err := parseWebhookBody(body)
	if err != nil {
		return err
	}
	if err := webhook.ValidateURL(url, s.cfg.WebhookAllowPrivate); err != nil {
		return err
	}
	p, _ := principal(c)
	secret := webhook.NewSecret()
	w, err := hooks.SetWebhook(c.UserContext(), p.Account.ID, pathParam(c, "id"), url, secret, s.deps.Now())
	if err != nil {
		return err
	}
	s.watchChanged(c, w.ID)
	return writeJSON(c, fiber.StatusCreated, registration(w, url, secret))
}

// rotateWebhookSecret is POST /v1/watches/{id}/webhook/rotate: a new secret
// for the same URL; the old secret is not used again, not even for retries
// already scheduled. A request body, if any, is ignored. 404 when the watch
// has no webhook. 200 with the registration result.
func (s *Server) rotateWebhookSecret(c *fiber.Ctx) error {
	hooks, err := s.webhooks()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	secret := webhook.NewSecret()
	w, err := hooks.RotateSecret(c.UserContext(), p.Account.ID, pathParam(c, "id"), secret, s.deps.Now())
	if err != nil {
		return err
	}
	s.watchChanged(c, w.ID)
	return writeJSON(c, fiber.StatusOK, registration(w, "", secret))
}

// deleteWebhook is DELETE /v1/watches/{id}/webhook: delivery stops, pending
// deliveries become dead with last_error "webhook removed", and the watch
// stays pollable through its matches. 404 when the watch has no webhook.
// 204 with no body.
func (s *Server) deleteWebhook(c *fiber.Ctx) error {
	hooks, err := s.webhooks()
	if err != nil {
		return err
	}
	p, _ := principal(c)
	id := pathParam(c, "id")
	if err := hooks.DeleteWebhook(c.UserContext(), p.Account.ID, id, s.deps.Now()); err != nil {
		return err
	}
	s.watchChanged(c, id)
	c.Status(fiber.StatusNoContent)
	return nil
}

// watchDeliveries is GET /v1/watches/{id}/deliveries?limit=L: the watch's
// most recent delivery records, newest first; limit 1..100, default 50.
// A watch without deliveries (or without a webhook) lists {"data": []}.
func (s *Server) watchDeliveries(c *fiber.Ctx) error {
	hooks, err := s.webhooks()
	if err != nil {
		return err
	}
	limit, err := params{c}.integer("limit", DefaultDeliveriesLimit, 1, MaxDeliveriesLimit)
	if err != nil {
		return err
	}
	p, _ := principal(c)
	recs, err := hooks.Deliveries(c.UserContext(), p.Account.ID, pathParam(c, "id"), limit)
	if err != nil {
		return err
	}
	if recs == nil {
		recs = []delivery.Record{}
	}
	return writeJSON(c, fiber.StatusOK, deliveryList{Data: recs})
}

// webhooks returns the webhook store. A deployment with webhooks off
// answers every webhook route with 500 webhook_unavailable (after the
// route, key, subscription and account-key checks, before validation); a
// server built without a store answers with a logged server_error.
func (s *Server) webhooks() (store.Webhooks, error) {
	if !s.cfg.Webhooks {
		return nil, errs.New(errs.WebhookUnavailable, webhookUnavailableMessage)
	}
	if s.deps.Webhooks == nil {
		return nil, errs.New(errs.ServerError, "no webhook store configured (api.Deps.Webhooks is nil)")
	}
	return s.deps.Webhooks, nil
}

// watchChanged tells Deps.OnWatchChange, if set, that a watch's stored
// state changed, so the delivery dispatcher can refresh what it holds.
func (s *Server) watchChanged(c *fiber.Ctx, watchID string) {
	if s.deps.OnWatchChange != nil {
		s.deps.OnWatchChange(c.UserContext(), watchID)
	}
}

// registration builds the registration result from the stored watch; url
// stands in when the store did not return the webhook URL.
func registration(w watch.Watch, url, secret string) webhookRegistration {
	if w.WebhookURL != nil {
		url = *w.WebhookURL
	}
	return webhookRegistration{ID: w.ID, WebhookURL: url, Secret: secret}
}

// parseWebhookBody returns the url member of a registration body. No body
// (or only whitespace) is empty_request; anything but a JSON object is
// invalid_json; an absent, null or empty url is missing_url (as is {}); a
// url that is not a string is invalid_webhook_url. Other members are
// ignored, so clients may send fields of later versions; the response shows
// exactly what was registered. The url is used exactly as sent (no
// trimming): webhook.ValidateURL judges it.
func parseWebhookBody(body []byte) (string, error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return "", errs.New(errs.EmptyRequest, `a JSON body is required: send {"url": "https://your-host.example/path"}`)
	}
	var m map[string]json.RawMessage
	if !json.Valid(t) {
		err := json.Unmarshal(t, &m)
		return "", errs.New(errs.InvalidJSON, `the body is not valid JSON (%v); send {"url": "https://your-host.example/path"}`, err)
	}
	if t[0] != '{' || json.Unmarshal(t, &m) != nil {
		return "", errs.New(errs.InvalidJSON, `the body must be a JSON object such as {"url": "https://your-host.example/path"}, not %s`, clipJSON(t))
	}
	raw, ok := m["url"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", webhook.ValidateURL("", false) // missing_url, worded as everywhere
	}
	var url string
	if err := json.Unmarshal(raw, &url); err != nil {
		return "", errs.New(errs.InvalidWebhookURL, `url must be a string holding an absolute https:// URL; got %s`, clipJSON(raw))
	}
	if len(url) > MaxWebhookURLLength {
		return "", errs.New(errs.InvalidWebhookURL, "url is %d bytes long; at most %d are accepted, so use a shorter endpoint URL", len(url), MaxWebhookURLLength)
	}
	return url, nil
}

// clipJSON shortens a raw JSON value for an error message.
func clipJSON(raw []byte) string { return errs.Clip(string(raw)) }
