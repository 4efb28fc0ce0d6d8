package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// testPlans are the plan limits of the watch tests: "free" is tiny so the
// limits are reached with the fixture's few companies; "standard" is roomy.
func testPlans() map[string]account.Plan {
	return map[string]account.Plan{
		"free":       {Name: "free", Companies: 4, Watches: 3},
		"standard":   {Name: "standard", Companies: 10000, Watches: 20},
		"enterprise": {Name: "enterprise", Companies: 1000000, Watches: 500},
	}
}

// watchClock is the API clock of the watch tests: it moves only when told.
type watchClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *watchClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *watchClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// watchFixture is the read fixture (real SQLite file, seeded notices and
// register) with the watch store wired in, plans from testPlans and a
// movable clock.
type watchFixture struct {
	*fixture
	clock *watchClock
	// accounts and writer are where the tests create accounts and store
	// notices: the SQLite store, or in scale mode the Redis store and the
	// scale-mode write path.
	accounts store.Accounts
	writer   store.NoticeWriter
}

// The conformance tests run against the SQLite store's watches.
var _ store.Watches = (*sqlite.Store)(nil)

// newWatchFixture builds the fixture.
func newWatchFixture(t *testing.T, plans map[string]account.Plan) *watchFixture {
	t.Helper()
	f := newFixture(t)
	var ws store.Watches = f.store
	var accounts store.Accounts = f.store
	var writer store.NoticeWriter = f.store
	if scaleWatches {
		ws, accounts, writer = scaleStores(t, f)
	}
	if plans == nil {
		plans = testPlans()
	}
	clock := &watchClock{t: fixedNow}
	f.srv = New(config.Default(), Deps{
		Notices:  f.store,
		Accounts: accounts,
		Watches:  ws,
		Plans:    plans,
		Now:      clock.Now,
		Logger:   slog.New(slog.NewTextHandler(f.logs, nil)),
	})
	return &watchFixture{fixture: f, clock: clock, accounts: accounts, writer: writer}
}

// newAccount creates another active account on plan and returns its keys.
func (f *watchFixture) newAccount(t *testing.T, plan string) account.Created {
	t.Helper()
	c, err := f.accounts.CreateAccount(context.Background(), "Account on "+plan, plan)
	if err != nil {
		t.Fatalf("create account on %s: %v", plan, err)
	}
	return c
}

// watchJSON mirrors the watch object of API.md.
type watchJSON struct {
	ID                string         `json:"id"`
	Name              string         `json:"name"`
	Active            bool           `json:"active"`
	DeactivatedReason *string        `json:"deactivated_reason"`
	Identifiers       []string       `json:"identifiers"`
	IdentifierCount   int            `json:"identifier_count"`
	Unresolved        []string       `json:"unresolved"`
	Filters           map[string]any `json:"filters"`
	AlertEmail        *string        `json:"alert_email"`
	WebhookURL        *string        `json:"webhook_url"`
	CreatedAt         string         `json:"created_at"`
	UpdatedAt         string         `json:"updated_at"`
}

// matchesJSON mirrors the matches envelope.
type matchesJSON struct {
	Data      []notice.Notice `json:"data"`
	Since     int64           `json:"since"`
	NextSince int64           `json:"next_since"`
	HasMore   bool            `json:"has_more"`
}

// call sends a request with a string body ("" sends none).
func (f *watchFixture) call(t *testing.T, method, target, key, body string) response {
	t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	return f.send(t, method, target, key, b)
}

// create posts a watch with key and requires 201. The clock then moves on
// a second, so watches created one after another are ordered by created_at.
func (f *watchFixture) create(t *testing.T, key, body string) watchJSON {
	t.Helper()
	res := f.call(t, http.MethodPost, "/v1/watches", key, body)
	if res.status != http.StatusCreated {
		t.Fatalf("POST /v1/watches %s: status %d, want 201; body %s", body, res.status, res.body)
	}
	f.clock.Advance(time.Second)
	var w watchJSON
	decodeBody(t, res, &w)
	return w
}

// list returns the ids of the account's watches.
func (f *watchFixture) list(t *testing.T, key string) []string {
	t.Helper()
	res := f.call(t, http.MethodGet, "/v1/watches", key, "")
	if res.status != http.StatusOK {
		t.Fatalf("GET /v1/watches: status %d; body %s", res.status, res.body)
	}
	var l struct {
		Data []watchJSON `json:"data"`
	}
	decodeBody(t, res, &l)
	ids := []string{}
	for _, w := range l.Data {
		ids = append(ids, w.ID)
	}
	return ids
}

func decodeBody(t *testing.T, res response, v any) {
	t.Helper()
	wantJSONType(t, res)
	if err := json.Unmarshal(res.body, v); err != nil {
		t.Fatalf("decode %s: %v", res.body, err)
	}
}

// keysOf returns the sorted member names of a JSON object.
func keysOf(t *testing.T, raw []byte) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %s", raw)
	}
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sortedKeys sorts a literal list of member names for comparison.
func sortedKeys(ks ...string) []string {
	sort.Strings(ks)
	return ks
}

// identifiersBody returns {"identifiers": [...]} for n distinct, well-formed
// ACNs starting at from, with extra appended raw JSON elements.
func identifiersBody(n, from int, extra ...string) string {
	var b strings.Builder
	b.WriteString(`{"identifiers":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%09d"`, from+i)
	}
	for i, e := range extra {
		if n > 0 || i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestWatchCreate: 201 with the full watch object of API.md; GET returns
// the same object; the list drops only the identifiers array.
func TestWatchCreate(t *testing.T) {
	f := newWatchFixture(t, nil)
	body := `{"identifiers": ["123 456 780", "444444446", "123456780", "11123456780"],
		"filters": {"state": ["NSW", "nsw"], "notice_purpose": "Appointment"},
		"name": "  Clients  ", "alert_email": "ops@example.com"}`
	res := f.call(t, http.MethodPost, "/v1/watches", f.acct, body)
	if res.status != http.StatusCreated {
		t.Fatalf("status %d, want 201; body %s", res.status, res.body)
	}
	f.clock.Advance(time.Second)
	wantKeys := sortedKeys("id", "name", "active", "identifiers", "identifier_count", "unresolved",
		"filters", "alert_email", "webhook_url", "created_at", "updated_at")
	if got := keysOf(t, res.body); !slices.Equal(got, wantKeys) {
		t.Errorf("watch members %v, want %v", got, wantKeys)
	}
	var w watchJSON
	decodeBody(t, res, &w)
	if !regexp.MustCompile(`^wch_[a-z0-9]{10,}$`).MatchString(w.ID) {
		t.Errorf("id %q, want wch_ and a random suffix", w.ID)
	}
	if loc := res.header.Get("Location"); loc != "/v1/watches/"+w.ID {
		t.Errorf("Location %q, want /v1/watches/%s", loc, w.ID)
	}
	if !w.Active || w.DeactivatedReason != nil {
		t.Errorf("active %v reason %v, want active and no reason", w.Active, w.DeactivatedReason)
	}
	if want := []string{"123456780", "444444446", "11123456780"}; !slices.Equal(w.Identifiers, want) || w.IdentifierCount != 3 {
		t.Errorf("identifiers %v (count %d), want %v: normalised, deduplicated, first-seen order", w.Identifiers, w.IdentifierCount, want)
	}
	if want := []string{"444444446"}; !slices.Equal(w.Unresolved, want) {
		t.Errorf("unresolved %v, want %v", w.Unresolved, want)
	}
	if w.Name != "Clients" || w.AlertEmail == nil || *w.AlertEmail != "ops@example.com" || w.WebhookURL != nil {
		t.Errorf("name %q alert_email %v webhook_url %v", w.Name, w.AlertEmail, w.WebhookURL)
	}
	if want := notice.Timestamp(fixedNow); w.CreatedAt != want || w.UpdatedAt != want {
		t.Errorf("created_at %q updated_at %q, want %q", w.CreatedAt, w.UpdatedAt, want)
	}
	if st, _ := w.Filters["state"].([]any); len(st) != 1 || st[0] != "NSW" {
		t.Errorf("filters.state %v, want [NSW]", w.Filters["state"])
	}
	if w.Filters["include_deregistration"] != true {
		t.Errorf("filters.include_deregistration %v, want true by default", w.Filters["include_deregistration"])
	}

	t.Run("GET returns the same object", func(t *testing.T) {
		got := f.call(t, http.MethodGet, "/v1/watches/"+w.ID, f.acct, "")
		if got.status != http.StatusOK || !bytes.Equal(got.body, res.body) {
			t.Errorf("GET: status %d body %s; want 200 and the create response %s", got.status, got.body, res.body)
		}
	})
	t.Run("list drops identifiers only", func(t *testing.T) {
		other := f.create(t, f.acct, `{"filters": {"q": "liquidator"}}`)
		got := f.call(t, http.MethodGet, "/v1/watches", f.acct, "")
		var l struct {
			Data []json.RawMessage `json:"data"`
		}
		decodeBody(t, got, &l)
		if len(l.Data) != 2 {
			t.Fatalf("list has %d watches, want 2: %s", len(l.Data), got.body)
		}
		wantKeys := slices.DeleteFunc(slices.Clone(wantKeys), func(k string) bool { return k == "identifiers" })
		for _, raw := range l.Data {
			if ks := keysOf(t, raw); !slices.Equal(ks, wantKeys) {
				t.Errorf("list member %v, want %v", ks, wantKeys)
			}
		}
		if ids := f.list(t, f.acct); !slices.Equal(ids, []string{w.ID, other.ID}) {
			t.Errorf("list order %v, want oldest first %v", ids, []string{w.ID, other.ID})
		}
	})
	t.Run("empty list is [] not null", func(t *testing.T) {
		fresh := f.newAccount(t, "standard")
		got := f.call(t, http.MethodGet, "/v1/watches", fresh.AccountKey, "")
		if got.status != 200 || strings.TrimSpace(string(got.body)) != `{"data":[]}` {
			t.Errorf("status %d body %s, want {\"data\":[]}", got.status, got.body)
		}
	})
	t.Run("Content-Type is not required", func(t *testing.T) {
		for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "text/plain"} {
			req := httptest.NewRequest(http.MethodPost, "/v1/watches", strings.NewReader(`{"identifiers":["222222228"]}`))
			req.Header.Set(HeaderAPIKey, f.acct)
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			if r := f.roundTrip(t, req); r.status != http.StatusCreated {
				t.Errorf("Content-Type %q: status %d, want 201", ct, r.status)
			}
		}
	})
}

// TestWatchCreateValidation: every 400 of POST /v1/watches, in API.md's
// order; bodies with two problems report the earlier one.
func TestWatchCreateValidation(t *testing.T) {
	f := newWatchFixture(t, nil)
	tests := []struct {
		name string
		body string
		code string
		msg  []string // substrings of the message
	}{
		{"no body", "", "empty_request", nil},
		{"blank body", "  \n ", "empty_request", nil},
		{"not JSON", "identifiers=123456780", "invalid_json", nil},
		{"truncated JSON", `{"identifiers": ["123456780"`, "invalid_json", nil},
		{"array body", `["123456780"]`, "invalid_json", nil},
		{"too many before malformed", identifiersBody(50001, 1, `"x"`), "too_many_identifiers", []string{"50002", "50000"}},
		{"too many before unknown filter", strings.TrimSuffix(identifiersBody(50001, 1), "}") + `,"filters":{"colour":1}}`, "too_many_identifiers", nil},
		{"malformed identifier named with position", `{"identifiers": ["123456780", "12345", "abc"]}`, "invalid_identifier", []string{`"12345"`, "position 1", "2 of 3"}},
		{"JSON number identifier", `{"identifiers": [123456780]}`, "invalid_identifier", []string{"123456780", "position 0"}},
		{"identifiers not an array", `{"identifiers": "123456780"}`, "invalid_identifier", nil},
		{"malformed before unknown filter", `{"identifiers": ["12"], "filters": {"colour": "red"}}`, "invalid_identifier", nil},
		{"unknown filter field", `{"identifiers": ["123456780"], "filters": {"colour": "red"}}`, "invalid_filter", []string{"colour"}},
		{"unknown top-level field", `{"identifiers": ["123456780"], "acns": []}`, "invalid_filter", []string{"acns"}},
		{"wrong filter type", `{"filters": {"state": 3}}`, "invalid_filter", []string{"state"}},
		{"bad filters.q", `{"filters": {"q": "\"unbalanced"}}`, "invalid_filter", []string{"q"}},
		{"unknown filter before empty watch", `{"filters": {"colour": "red"}}`, "invalid_filter", nil},
		{"empty object", `{}`, "empty_watch", nil},
		{"empty lists", `{"identifiers": [], "filters": {}}`, "empty_watch", nil},
		{"include_deregistration true alone (the default)", `{"filters": {"include_deregistration": true}}`, "empty_watch", nil},
		{"empty watch before bad email", `{"identifiers": [], "alert_email": "nope"}`, "empty_watch", nil},
		{"bad alert_email", `{"identifiers": ["123456780"], "alert_email": "nope"}`, "invalid_alert_email", []string{"nope"}},
		{"alert_email wrong type", `{"identifiers": ["123456780"], "alert_email": 5}`, "invalid_alert_email", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, http.MethodPost, "/v1/watches", f.acct, tt.body)
			wantError(t, res, http.StatusBadRequest, tt.code)
			msg := errorMessage(t, res)
			for _, s := range tt.msg {
				if !strings.Contains(msg, s) {
					t.Errorf("message %q does not contain %q", msg, s)
				}
			}
		})
	}
	if ids := f.list(t, f.acct); len(ids) != 0 {
		t.Errorf("rejected creates stored watches %v", ids)
	}
	t.Run("Content-Encoding is refused", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/v1/watches", strings.NewReader(`{"identifiers":["123456780"]}`))
		req.Header.Set(HeaderAPIKey, f.acct)
		req.Header.Set("Content-Encoding", "gzip")
		wantError(t, f.roundTrip(t, req), 400, "invalid_json")
	})
}

// TestWatchQuota: the plan's watch count and company limit, ABNs that
// resolve to a watched ACN counted once, the 402 messages, nothing written
// on rejection, validation before quota, and DELETE freeing quota. The free
// plan here allows 4 companies and 3 watches.
func TestWatchQuota(t *testing.T) {
	f := newWatchFixture(t, nil)
	acc := f.newAccount(t, "free")
	key := acc.AccountKey

	// Alpha (ACN 123456780 / ABN 11123456780) and Delta (333333332 /
	// 88333333332) are in the register.
	w1 := f.create(t, key, `{"identifiers": ["123456780", "333333332"]}`)
	// Both ABNs resolve to watched ACNs: only Beta is new. 3 of 4.
	w2 := f.create(t, key, `{"identifiers": ["11123456780", "88333333332", "111111114"]}`)

	t.Run("quota_exceeded names limit, current count and addition", func(t *testing.T) {
		// Gamma and Epsilon are new, Alpha (by ABN) is not: 3 + 2 > 4.
		res := f.call(t, http.MethodPost, "/v1/watches", key, `{"identifiers": ["222222228", "11123456780", "000000019"]}`)
		wantError(t, res, http.StatusPaymentRequired, "quota_exceeded")
		msg := errorMessage(t, res)
		for _, n := range []string{"4", "3", "2"} {
			if !regexp.MustCompile(`\b` + n + `\b`).MatchString(msg) {
				t.Errorf("message %q does not name %s (limit 4, current 3, adding 2)", msg, n)
			}
		}
		if ids := f.list(t, key); !slices.Equal(ids, []string{w1.ID, w2.ID}) {
			t.Errorf("watches after rejection %v, want unchanged %v", ids, []string{w1.ID, w2.ID})
		}
	})
	t.Run("a watch that only repeats watched companies fits", func(t *testing.T) {
		w := f.create(t, key, `{"identifiers": ["88333333332"], "filters": {"state": "NSW"}}`)
		if res := f.call(t, http.MethodDelete, "/v1/watches/"+w.ID, key, ""); res.status != 204 {
			t.Fatalf("delete: status %d; body %s", res.status, res.body)
		}
	})
	t.Run("validation comes before quota", func(t *testing.T) {
		res := f.call(t, http.MethodPost, "/v1/watches", key, `{"identifiers": ["222222228", "000000019", "1"]}`)
		wantError(t, res, http.StatusBadRequest, "invalid_identifier")
	})
	w3 := f.create(t, key, `{"identifiers": ["222222228"]}`) // 4 of 4, 3 of 3 watches
	t.Run("watch_limit_reached", func(t *testing.T) {
		res := f.call(t, http.MethodPost, "/v1/watches", key, `{"filters": {"state": "VIC"}}`)
		wantError(t, res, http.StatusPaymentRequired, "watch_limit_reached")
		if msg := errorMessage(t, res); !strings.Contains(msg, "3") {
			t.Errorf("message %q does not name the limit of 3 watches", msg)
		}
	})
	t.Run("watch_limit_reached is checked before quota_exceeded", func(t *testing.T) {
		res := f.call(t, http.MethodPost, "/v1/watches", key, `{"identifiers": ["000000019", "555555555"]}`)
		wantError(t, res, http.StatusPaymentRequired, "watch_limit_reached")
	})
	t.Run("validation comes before the watch limit", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodPost, "/v1/watches", key, `{}`), http.StatusBadRequest, "empty_watch")
	})
	t.Run("DELETE frees quota", func(t *testing.T) {
		// w1 held Alpha and Delta; w2 still holds both by ABN, so deleting
		// w1 frees a watch but no company: Epsilon still does not fit.
		if res := f.call(t, http.MethodDelete, "/v1/watches/"+w1.ID, key, ""); res.status != 204 {
			t.Fatalf("delete: status %d; body %s", res.status, res.body)
		}
		wantError(t, f.call(t, http.MethodPost, "/v1/watches", key, `{"identifiers": ["000000019"]}`), 402, "quota_exceeded")
		// Deleting w3 frees Gamma.
		if res := f.call(t, http.MethodDelete, "/v1/watches/"+w3.ID, key, ""); res.status != 204 {
			t.Fatalf("delete: status %d; body %s", res.status, res.body)
		}
		f.create(t, key, `{"identifiers": ["000000019"]}`)
	})
	t.Run("quota is per account", func(t *testing.T) {
		other := f.newAccount(t, "free")
		f.create(t, other.AccountKey, `{"identifiers": ["222222228", "000000019", "444444446", "555555555"]}`)
	})
}

// TestWatchConcurrentCreates fires many creates at once through the HTTP
// app: exactly as many succeed as the plan allows, the rest get 402, and
// the stored count never exceeds the limit.
func TestWatchConcurrentCreates(t *testing.T) {
	const attempts = 30
	tests := []struct {
		name  string
		plan  account.Plan
		body  func(i int) string
		code  string
		allow int
	}{
		{"watch count", account.Plan{Name: "free", Companies: 1000, Watches: 5},
			func(i int) string { return fmt.Sprintf(`{"identifiers": ["%09d"]}`, 900000000+i) }, "watch_limit_reached", 5},
		{"company limit", account.Plan{Name: "free", Companies: 7, Watches: 1000},
			func(i int) string { return fmt.Sprintf(`{"identifiers": ["%09d"]}`, 900000000+i) }, "quota_exceeded", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plans := testPlans()
			plans["free"] = tt.plan
			f := newWatchFixture(t, plans)
			key := f.newAccount(t, "free").AccountKey
			statuses := make([]int, attempts)
			codes := make([]string, attempts)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range attempts {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := httptest.NewRequest(http.MethodPost, "/v1/watches", strings.NewReader(tt.body(i)))
					req.Header.Set(HeaderAPIKey, key)
					<-start
					res, err := f.srv.App().Test(req, 20000)
					if err != nil {
						t.Errorf("create %d: %v", i, err)
						return
					}
					defer res.Body.Close()
					var e errorBody
					b, _ := io.ReadAll(res.Body)
					_ = json.Unmarshal(b, &e)
					statuses[i], codes[i] = res.StatusCode, string(e.Error.Code)
				}()
			}
			close(start)
			wg.Wait()
			created := 0
			for i := range attempts {
				switch {
				case statuses[i] == http.StatusCreated:
					created++
				case statuses[i] == http.StatusPaymentRequired && codes[i] == tt.code:
				default:
					t.Errorf("create %d: status %d code %q, want 201 or 402 %s", i, statuses[i], codes[i], tt.code)
				}
			}
			if created != tt.allow {
				t.Errorf("%d creates succeeded, want exactly %d", created, tt.allow)
			}
			if ids := f.list(t, key); len(ids) != tt.allow {
				t.Errorf("%d watches stored, want %d", len(ids), tt.allow)
			}
		})
	}
}

// TestWatchAccess: on every watch route, 401 before 402 before 403 before
// validation; read-only keys are 403 account_required; POST /v1/match takes
// either key; wrong methods are 405 with Allow.
func TestWatchAccess(t *testing.T) {
	f := newWatchFixture(t, nil)
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	routes := []struct{ method, target, body string }{
		{"POST", "/v1/watches", `{"identifiers": ["123456780"]}`},
		{"POST", "/v1/watches", `{"identifiers": ["bad"]}`},
		{"POST", "/v1/watches", ""},
		{"GET", "/v1/watches", ""},
		{"HEAD", "/v1/watches", ""},
		{"GET", "/v1/watches/" + w.ID, ""},
		{"GET", "/v1/watches/wch_missing", ""},
		{"PATCH", "/v1/watches/" + w.ID, `{"active": false}`},
		{"PATCH", "/v1/watches/" + w.ID, `{"colour": 1}`},
		{"DELETE", "/v1/watches/" + w.ID, ""},
		{"GET", "/v1/watches/" + w.ID + "/matches", ""},
		{"GET", "/v1/watches/" + w.ID + "/matches?since=-1", ""},
	}
	keys := []struct {
		name, key string
		status    int
		code      string
	}{
		{"no key", "", 401, "unauthorised"},
		{"unknown key", "nk_acct_nope", 401, "unauthorised"},
		{"lapsed account key", f.lapsedAcct, 402, "subscription_inactive"},
		{"lapsed read key", f.lapsedRead, 402, "subscription_inactive"},
		{"read key", f.read, 403, "account_required"},
	}
	for _, r := range routes {
		for _, k := range keys {
			t.Run(r.method+" "+r.target+" "+r.body+" "+k.name, func(t *testing.T) {
				res := f.call(t, r.method, r.target, k.key, r.body)
				if r.method == "HEAD" {
					if res.status != k.status || len(res.body) != 0 {
						t.Errorf("status %d body %q, want %d and no body", res.status, res.body, k.status)
					}
					return
				}
				wantError(t, res, k.status, k.code)
			})
		}
	}
	if got := f.call(t, "GET", "/v1/watches/"+w.ID, f.acct, ""); got.status != 200 {
		t.Errorf("watch changed by rejected requests: GET status %d", got.status)
	}

	t.Run("POST /v1/match", func(t *testing.T) {
		body := `{"identifiers": ["123456780"]}`
		for _, k := range []struct {
			key    string
			status int
		}{{f.read, 200}, {f.acct, 200}, {"", 401}, {f.lapsedRead, 402}, {f.lapsedAcct, 402}} {
			if res := f.call(t, "POST", "/v1/match", k.key, body); res.status != k.status {
				t.Errorf("key %q: status %d, want %d; body %s", k.key, res.status, k.status, res.body)
			}
		}
		wantError(t, f.call(t, "POST", "/v1/match", f.lapsedRead, `{"identifiers": ["x"]}`), 402, "subscription_inactive")
	})

	methods := []struct{ method, target, allow string }{
		{"PUT", "/v1/watches", "GET, HEAD, POST"},
		{"DELETE", "/v1/watches", "GET, HEAD, POST"},
		{"POST", "/v1/watches/" + w.ID, "DELETE, GET, HEAD, PATCH"},
		{"PUT", "/v1/watches/" + w.ID, "DELETE, GET, HEAD, PATCH"},
		{"POST", "/v1/watches/" + w.ID + "/matches", "GET, HEAD"},
		{"GET", "/v1/match", "POST"},
	}
	for _, m := range methods {
		t.Run(m.method+" "+m.target, func(t *testing.T) {
			res := f.call(t, m.method, m.target, "", "")
			wantError(t, res, 405, "method_not_allowed")
			if got := res.header.Get("Allow"); got != m.allow {
				t.Errorf("Allow %q, want %q", got, m.allow)
			}
		})
	}
	t.Run("unknown watch sub-route is 404 before auth", func(t *testing.T) {
		wantError(t, f.call(t, "GET", "/v1/watches/"+w.ID+"/nothing", "", ""), 404, "not_found")
	})
}

// TestWatchIsolation: another account's watch is 404 not_found on every
// watch route, indistinguishable from a missing one, and is left intact.
func TestWatchIsolation(t *testing.T) {
	f := newWatchFixture(t, nil)
	w := f.create(t, f.acct, `{"identifiers": ["123456780"], "name": "mine"}`)
	other := f.newAccount(t, "standard").AccountKey
	const missing = "wch_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	routes := []struct{ method, suffix, body string }{
		{"GET", "", ""},
		{"PATCH", "", `{"active": false, "name": "theirs"}`},
		{"DELETE", "", ""},
		{"GET", "/matches", ""},
		{"GET", "/matches?since=1&limit=5", ""},
	}
	for _, r := range routes {
		t.Run(r.method+" "+r.suffix, func(t *testing.T) {
			theirs := f.call(t, r.method, "/v1/watches/"+w.ID+r.suffix, other, r.body)
			wantError(t, theirs, 404, "not_found")
			none := f.call(t, r.method, "/v1/watches/"+missing+r.suffix, other, r.body)
			wantError(t, none, 404, "not_found")
			if a, b := strings.ReplaceAll(errorMessage(t, theirs), w.ID, "ID"), strings.ReplaceAll(errorMessage(t, none), missing, "ID"); a != b {
				t.Errorf("messages differ: %q (another account's) vs %q (missing)", a, b)
			}
		})
	}
	t.Run("validation before the resource", func(t *testing.T) {
		wantError(t, f.call(t, "PATCH", "/v1/watches/"+w.ID, other, `{"colour": 1}`), 400, "invalid_update")
		wantError(t, f.call(t, "GET", "/v1/watches/"+w.ID+"/matches?since=x", other, ""), 400, "invalid_since")
	})
	t.Run("other account's list is empty", func(t *testing.T) {
		if ids := f.list(t, other); len(ids) != 0 {
			t.Errorf("other account lists %v", ids)
		}
	})
	t.Run("the watch is untouched", func(t *testing.T) {
		var got watchJSON
		decodeBody(t, f.call(t, "GET", "/v1/watches/"+w.ID, f.acct, ""), &got)
		if got.Name != "mine" || !got.Active {
			t.Errorf("watch after other account's requests: name %q active %v", got.Name, got.Active)
		}
	})
}

// TestWatchPatch: active, name and alert_email; the deactivated_reason
// appears only while inactive; every 400 of PATCH.
func TestWatchPatch(t *testing.T) {
	f := newWatchFixture(t, nil)
	w := f.create(t, f.acct, `{"identifiers": ["123456780"], "name": "one", "alert_email": "a@example.com"}`)
	path := "/v1/watches/" + w.ID
	patch := func(t *testing.T, body string) (watchJSON, response) {
		t.Helper()
		res := f.call(t, http.MethodPatch, path, f.acct, body)
		if res.status != http.StatusOK {
			t.Fatalf("PATCH %s: status %d; body %s", body, res.status, res.body)
		}
		var got watchJSON
		decodeBody(t, res, &got)
		return got, res
	}

	t.Run("deactivate", func(t *testing.T) {
		f.clock.Advance(time.Minute)
		got, res := patch(t, `{"active": false}`)
		if got.Active || got.DeactivatedReason == nil || strings.TrimSpace(*got.DeactivatedReason) == "" {
			t.Errorf("active %v reason %v, want inactive with a reason", got.Active, got.DeactivatedReason)
		}
		if !slices.Contains(keysOf(t, res.body), "deactivated_reason") {
			t.Errorf("deactivated_reason missing: %s", res.body)
		}
		if want := notice.Timestamp(f.clock.Now()); got.UpdatedAt != want || got.CreatedAt != w.CreatedAt {
			t.Errorf("updated_at %q created_at %q, want %q and %q", got.UpdatedAt, got.CreatedAt, want, w.CreatedAt)
		}
		var read watchJSON
		decodeBody(t, f.call(t, "GET", path, f.acct, ""), &read)
		if read.Active || read.DeactivatedReason == nil {
			t.Errorf("GET after deactivation: active %v reason %v", read.Active, read.DeactivatedReason)
		}
	})
	t.Run("reactivate", func(t *testing.T) {
		got, res := patch(t, `{"active": true}`)
		if !got.Active || slices.Contains(keysOf(t, res.body), "deactivated_reason") {
			t.Errorf("active %v, body %s: want active without deactivated_reason", got.Active, res.body)
		}
	})
	t.Run("name and alert_email", func(t *testing.T) {
		got, _ := patch(t, `{"name": "two", "alert_email": "b@example.org"}`)
		if got.Name != "two" || got.AlertEmail == nil || *got.AlertEmail != "b@example.org" || !got.Active {
			t.Errorf("name %q alert_email %v active %v", got.Name, got.AlertEmail, got.Active)
		}
		got, res := patch(t, `{"alert_email": null}`)
		if got.AlertEmail != nil || got.Name != "two" || !bytes.Contains(res.body, []byte(`"alert_email":null`)) {
			t.Errorf("after clearing: %s", res.body)
		}
		if !slices.Equal(got.Identifiers, []string{"123456780"}) {
			t.Errorf("identifiers %v changed by PATCH", got.Identifiers)
		}
	})

	tests := []struct {
		name string
		body string
		code string
		msg  []string
	}{
		{"no body", "", "empty_request", nil},
		{"empty object", "{}", "empty_request", nil},
		{"not JSON", "active=false", "invalid_json", nil},
		{"unknown fields named", `{"identifiers": [], "active": true, "filters": {}}`, "invalid_update", []string{"identifiers", "filters"}},
		{"unknown field before bad email", `{"webhook_url": "x", "alert_email": "nope"}`, "invalid_update", []string{"webhook_url"}},
		{"active wrong type", `{"active": "false"}`, "invalid_update", []string{"active"}},
		{"active null", `{"active": null}`, "invalid_update", []string{"active"}},
		{"name wrong type", `{"name": 3}`, "invalid_update", []string{"name"}},
		{"bad alert_email", `{"alert_email": "Bob <bob@example.com>"}`, "invalid_alert_email", nil},
		{"alert_email without a dotted domain", `{"alert_email": "bob@localhost"}`, "invalid_alert_email", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, http.MethodPatch, path, f.acct, tt.body)
			wantError(t, res, http.StatusBadRequest, tt.code)
			for _, s := range tt.msg {
				if msg := errorMessage(t, res); !strings.Contains(msg, s) {
					t.Errorf("message %q does not name %q", msg, s)
				}
			}
		})
	}
	t.Run("rejected patches change nothing", func(t *testing.T) {
		var got watchJSON
		decodeBody(t, f.call(t, "GET", path, f.acct, ""), &got)
		if got.Name != "two" || got.AlertEmail != nil || !got.Active {
			t.Errorf("watch after rejected patches: %+v", got)
		}
	})
	t.Run("unknown watch with a valid body", func(t *testing.T) {
		wantError(t, f.call(t, http.MethodPatch, "/v1/watches/wch_nope", f.acct, `{"active": true}`), 404, "not_found")
	})
}

// TestWatchDelete: 204 with no body; the watch is gone afterwards.
func TestWatchDelete(t *testing.T) {
	f := newWatchFixture(t, nil)
	w := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	res := f.call(t, http.MethodDelete, "/v1/watches/"+w.ID, f.acct, "")
	if res.status != http.StatusNoContent || len(res.body) != 0 {
		t.Fatalf("status %d body %q, want 204 and no body", res.status, res.body)
	}
	for _, r := range []struct{ method, suffix string }{{"GET", ""}, {"DELETE", ""}, {"GET", "/matches"}} {
		wantError(t, f.call(t, r.method, "/v1/watches/"+w.ID+r.suffix, f.acct, ""), 404, "not_found")
	}
	if ids := f.list(t, f.acct); len(ids) != 0 {
		t.Errorf("list after delete %v", ids)
	}
}

// sourcesOf returns the source ids of notices, in order.
func sourcesOf(ns []notice.Notice) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, n.SourceID)
	}
	return out
}

// TestWatchMatches: matching (identifiers by ACN and by ABN, filters,
// deregistration included by default), ascending notice_seq, the since
// cursor, limit, has_more, and the 400s of the parameters.
func TestWatchMatches(t *testing.T) {
	f := newWatchFixture(t, nil)
	byCompany := f.create(t, f.acct, `{"identifiers": ["123456780"]}`)
	byABN := f.create(t, f.acct, `{"identifiers": ["11123456780"]}`)
	nsw := f.create(t, f.acct, `{"filters": {"state": "nsw"}}`)
	noDereg := f.create(t, f.acct, `{"identifiers": ["123456780"], "filters": {"include_deregistration": false}}`)
	nothing := f.create(t, f.acct, `{"identifiers": ["444444446"]}`)
	matches := func(t *testing.T, id, query string) matchesJSON {
		t.Helper()
		res := f.call(t, "GET", "/v1/watches/"+id+"/matches"+query, f.acct, "")
		if res.status != 200 {
			t.Fatalf("matches%s: status %d; body %s", query, res.status, res.body)
		}
		if ks := keysOf(t, res.body); !slices.Equal(ks, sortedKeys("data", "since", "next_since", "has_more")) {
			t.Errorf("envelope members %v", ks)
		}
		var m matchesJSON
		decodeBody(t, res, &m)
		return m
	}
	seq := map[string]int64{}
	for _, n := range matches(t, nsw.ID, "?limit=500").Data {
		seq[n.SourceID] = n.Seq
	}

	tests := []struct {
		name    string
		id      string
		query   string
		sources []string
		since   int64
		next    int64 // -1: the seq of the last source
		hasMore bool
	}{
		{"by ACN: ACN and ABN notices, deregistration included", byCompany.ID, "", []string{"N1", "N2"}, 0, -1, false},
		{"by ABN resolves to the ACN's notices", byABN.ID, "", []string{"N1", "N2"}, 0, -1, false},
		{"filters only, case-insensitive", nsw.ID, "", []string{"N1", "N2", "N5", "N6"}, 0, -1, false},
		{"include_deregistration false", noDereg.ID, "", []string{"N1"}, 0, -1, false},
		{"unknown company matches nothing", nothing.ID, "", []string{}, 0, 0, false},
		{"first page", nsw.ID, "?limit=2", []string{"N1", "N2"}, 0, -1, true},
		{"since=0 explicit", nsw.ID, "?since=0&limit=2", []string{"N1", "N2"}, 0, -1, true},
		{"leading zeros", nsw.ID, "?since=00&limit=2", []string{"N1", "N2"}, 0, -1, true},
		{"limit 500", nsw.ID, "?limit=500", []string{"N1", "N2", "N5", "N6"}, 0, -1, false},
		{"past the end keeps since", nsw.ID, "?since=1000", []string{}, 1000, 1000, false},
		{"since negative is read as 0", nsw.ID, "?since=-1&limit=2", []string{"N1", "N2"}, 0, -1, true},
		{"since with a plus sign", nsw.ID, "?since=%2B0&limit=2", []string{"N1", "N2"}, 0, -1, true},
		{"since past int64 reads an empty page", nsw.ID, "?since=99999999999999999999", []string{}, math.MaxInt64, math.MaxInt64, false},
		{"since below int64 is read as 0", nsw.ID, "?since=-99999999999999999999&limit=2", []string{"N1", "N2"}, 0, -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := matches(t, tt.id, tt.query)
			if got := sourcesOf(m.Data); !slices.Equal(got, tt.sources) {
				t.Errorf("sources %v, want %v", got, tt.sources)
			}
			next := tt.next
			if next == -1 {
				next = seq[tt.sources[len(tt.sources)-1]]
			}
			if m.Since != tt.since || m.NextSince != next || m.HasMore != tt.hasMore {
				t.Errorf("since %d next_since %d has_more %v, want %d %d %v", m.Since, m.NextSince, m.HasMore, tt.since, next, tt.hasMore)
			}
			for i := 1; i < len(m.Data); i++ {
				if m.Data[i].Seq <= m.Data[i-1].Seq {
					t.Errorf("not ascending by notice_seq: %d then %d", m.Data[i-1].Seq, m.Data[i].Seq)
				}
			}
		})
	}
	t.Run("since excludes notice_seq <= since", func(t *testing.T) {
		m := matches(t, nsw.ID, fmt.Sprintf("?since=%d", seq["N2"]))
		if got := sourcesOf(m.Data); !slices.Equal(got, []string{"N5", "N6"}) || m.Since != seq["N2"] {
			t.Errorf("sources %v since %d, want [N5 N6] since %d", got, m.Since, seq["N2"])
		}
	})
	t.Run("empty data is [] not null", func(t *testing.T) {
		res := f.call(t, "GET", "/v1/watches/"+nothing.ID+"/matches", f.acct, "")
		if !bytes.Contains(res.body, []byte(`"data":[]`)) {
			t.Errorf("body %s, want \"data\":[]", res.body)
		}
	})
	t.Run("notice objects are complete", func(t *testing.T) {
		res := f.call(t, "GET", "/v1/watches/"+byCompany.ID+"/matches", f.acct, "")
		var raw struct {
			Data []json.RawMessage `json:"data"`
		}
		decodeBody(t, res, &raw)
		want := sortedKeys("id", "notice_seq", "source_id", "source_url", "published_date", "published_at",
			"collected_at", "acn", "abn", "company_name", "notice_type", "notice_code", "notice_purpose",
			"appointment_type", "state", "status", "text", "practitioners", "replaces")
		for _, n := range raw.Data {
			if ks := keysOf(t, n); !slices.Equal(ks, want) {
				t.Errorf("notice members %v, want %v", ks, want)
			}
		}
	})

	bad := []struct{ name, query, code string }{
		{"since not a number", "?since=abc", "invalid_since"},
		{"since decimal", "?since=1.5", "invalid_since"},
		{"since a sign alone", "?since=-", "invalid_since"},
		{"since two signs", "?since=--1", "invalid_since"},
		{"since empty", "?since=", "invalid_since"},
		{"since with spaces", "?since=%201", "invalid_since"},
		{"since repeated", "?since=1&since=2", "invalid_since"},
		{"since bad before limit bad", "?since=x&limit=0", "invalid_since"},
		{"limit zero", "?limit=0", "invalid_parameter"},
		{"limit over 500", "?limit=501", "invalid_parameter"},
		{"limit not a number", "?limit=ten", "invalid_parameter"},
		{"limit repeated", "?limit=1&limit=2", "invalid_parameter"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, "GET", "/v1/watches/"+nsw.ID+"/matches"+tt.query, f.acct, "")
			wantError(t, res, 400, tt.code)
		})
	}
	t.Run("bad since on a missing watch is 400", func(t *testing.T) {
		wantError(t, f.call(t, "GET", "/v1/watches/wch_nope/matches?since=x", f.acct, ""), 400, "invalid_since")
	})
	t.Run("matches of a deactivated watch stay readable", func(t *testing.T) {
		if res := f.call(t, "PATCH", "/v1/watches/"+byCompany.ID, f.acct, `{"active": false}`); res.status != 200 {
			t.Fatalf("deactivate: %d %s", res.status, res.body)
		}
		if got := sourcesOf(matches(t, byCompany.ID, "").Data); !slices.Equal(got, []string{"N1", "N2"}) {
			t.Errorf("sources %v, want [N1 N2]", got)
		}
	})
}

// arrival builds a notice as the collector hands it to the store.
func arrival(src, acn, abn, purpose, state string, published time.Time) notice.Notice {
	n := notice.Notice{
		ID:            notice.IDFor(src),
		SourceID:      src,
		PublishedAt:   notice.Timestamp(published),
		PublishedDate: notice.PublishedDate(published),
		CompanyName:   "Company " + src,
		NoticeType:    purpose + " notice",
		NoticeCode:    "XX",
		NoticePurpose: purpose,
		State:         state,
		Status:        "In Liquidation",
		Text:          "Notice " + src,
	}
	if acn != "" {
		n.ACN = &acn
	}
	if abn != "" {
		n.ABN = &abn
	}
	return n
}

// TestWatchMatchesPolling: notices arrive in several batches while a client
// polls with since=next_since and a small limit; the client sees each
// matching notice exactly once, in arrival order, and nothing else. A
// re-ingested notice (same source_id) is not delivered again.
func TestWatchMatchesPolling(t *testing.T) {
	f := newWatchFixture(t, nil)
	// Alpha by ACN (its ABN notices resolve through the register) and a
	// company unknown at creation, which must still match once it appears.
	w := f.create(t, f.acct, `{"identifiers": ["123456780", "987654321"], "filters": {"state": ["NSW", "VIC"]}}`)
	day := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	batches := [][]notice.Notice{
		{
			arrival("P1", "987654321", "", "Appointment", "NSW", day),
			arrival("P2", "222222228", "", "Appointment", "NSW", day),               // other company
			arrival("P3", "123456780", "", "Meeting", "QLD", day),                   // fails the filter
			arrival("P4", "", "11123456780", "Dividend", "VIC", day),                // by ABN
			arrival("P5", "123456780", "", "Deregistration", "NSW", day),            // deregistration included
			arrival("P6", "", "", "Appointment", "NSW", day),                        // no identifier
			arrival("P7", "987654321", "", "Meeting", "VIC", day.AddDate(0, -6, 0)), // old publication, new arrival
		},
		{},
		{
			arrival("P8", "333333332", "", "Appointment", "NSW", day),
			arrival("P9", "987654321", "", "Dividend", "NSW", day),
		},
		{
			// P1 re-ingested: updated in place, keeps its seq; not new.
			func() notice.Notice {
				n := arrival("P1", "987654321", "", "Appointment", "NSW", day)
				n.Text = "corrected"
				return n
			}(),
			arrival("P10", "123456780", "", "Appointment", "NSW", day),
			arrival("P11", "123456780", "", "Appointment", "NSW", day),
			arrival("P12", "123456780", "", "Appointment", "WA", day),
			arrival("P13", "123456780", "", "Appointment", "VIC", day),
		},
	}
	want := []string{"N1", "N2", "P1", "P4", "P5", "P7", "P9", "P10", "P11", "P13"}

	var seen []string
	var since int64
	poll := func(t *testing.T) {
		t.Helper()
		for range 100 {
			res := f.call(t, "GET", fmt.Sprintf("/v1/watches/%s/matches?since=%d&limit=2", w.ID, since), f.acct, "")
			if res.status != 200 {
				t.Fatalf("poll since=%d: status %d; body %s", since, res.status, res.body)
			}
			var m matchesJSON
			decodeBody(t, res, &m)
			if m.Since != since {
				t.Errorf("since echoed %d, want %d", m.Since, since)
			}
			for _, n := range m.Data {
				if n.Seq <= since {
					t.Errorf("notice %s seq %d not after since %d", n.SourceID, n.Seq, since)
				}
				seen = append(seen, n.SourceID)
			}
			if len(m.Data) > 0 && m.NextSince != m.Data[len(m.Data)-1].Seq {
				t.Errorf("next_since %d, want the last notice's seq %d", m.NextSince, m.Data[len(m.Data)-1].Seq)
			}
			if len(m.Data) == 0 && m.NextSince != since {
				t.Errorf("empty page moved next_since from %d to %d", since, m.NextSince)
			}
			since = m.NextSince
			if !m.HasMore {
				return
			}
		}
		t.Fatal("has_more never became false")
	}
	poll(t)
	for _, b := range batches {
		if len(b) > 0 {
			if _, err := f.writer.UpsertNotices(context.Background(), b); err != nil {
				t.Fatalf("upsert batch: %v", err)
			}
		}
		poll(t)
		poll(t) // an extra poll with nothing new returns nothing
	}
	if !slices.Equal(seen, want) {
		t.Errorf("client saw %v, want each matching notice once, in order: %v", seen, want)
	}
}
