// Package elastic is the scale backend's notice and register store
// (store.Notices, store.NoticeWriter, store.RegisterWriter) over
// Elasticsearch 8, with the writer lease, notice_seq and the publish log in
// Redis (package publog). Index and alias names, and why only core
// features are used: docs/elasticsearch.md.
package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	gojson "github.com/goccy/go-json"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/mappings"
)

// A store's timeouts (Store.timeout, Store.bulkTimeout), and its bulk
// workers: 3 loaded registers 10-13% faster than 2 (docs/benchmarks.md).
const (
	defaultTimeout     = 10 * time.Second
	defaultBulkTimeout = 2 * time.Minute
	defaultBulkWorkers = 3
)

// Config says how to reach Elasticsearch and Redis.
type Config struct {
	// URL is the Elasticsearch URL, or several nodes' comma-separated
	// (NOTICES_ELASTICSEARCH_URL); a failed request is retried on another.
	URL string
	// Replicas is the number of replicas of each index the store creates
	// (NOTICES_ELASTICSEARCH_REPLICAS; 0: none).
	Replicas int
	// APIKey is the encoded id:key of an API key sent on every request
	// (NOTICES_ELASTICSEARCH_API_KEY); "": none, or the URL's user:password.
	APIKey string
	// CACert is the PEM of the CAs an https node's certificate must chain
	// to (NOTICES_ELASTICSEARCH_CA_FILE); CAFingerprint instead pins the
	// SHA-256 of a certificate the node presents (hex, colons allowed;
	// NOTICES_ELASTICSEARCH_CA_FINGERPRINT). Neither: the system's roots.
	CACert        []byte
	CAFingerprint string
	Namespace     string           // prefixes every index and alias
	Log           *publog.Log      // the writer lease, notice_seq and the publish log (Redis)
	Now           func() time.Time // stamps collected_at (time.Now when nil)
	// AggCache is how many filters and stats answers the store keeps
	// (aggCache): DefaultAggCache when 0, none when negative.
	AggCache int
}

// maxIdleConns is how many idle connections to Elasticsearch a store keeps.
const maxIdleConns = 64

// Store is the Elasticsearch notice and register store of one namespace.
type Store struct {
	es     *elasticsearch.Client
	cfg    Config
	aggs   *aggCache   // nil: none
	counts *nodeCounts // nodes.go
	probes []nodeProbe
	// timeout bounds every read and small call, bulkTimeout every bulk
	// request, refresh and index creation; bulkWorkers is how many bulk
	// requests a load sends at once (the defaults; tests set others).
	timeout, bulkTimeout time.Duration
	bulkWorkers          int
}

var (
	_ store.Notices        = (*Store)(nil)
	_ store.NoticeWriter   = (*Store)(nil)
	_ store.RegisterWriter = (*Store)(nil)
)

// Open connects to Elasticsearch and makes sure both aliases exist (an
// empty first index behind each). An unreachable Elasticsearch is
// errs.BackendUnavailable, at Open and in every call while it is down.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Namespace == "" || strings.ToLower(cfg.Namespace) != cfg.Namespace {
		return nil, fmt.Errorf("elastic: namespace %q must be non-empty lower case", cfg.Namespace)
	}
	if cfg.Log == nil {
		return nil, errors.New("elastic: Config.Log is required (the writer lease, notice_seq and the publish log live in Redis)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	counts := &nodeCounts{failures: map[string]int64{}}
	es, err := newClient(cfg, counts)
	if err != nil {
		return nil, err
	}
	probes, err := newProbes(cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{es: es, cfg: cfg, aggs: newAggCache(cfg.AggCache),
		counts: counts, probes: probes, timeout: defaultTimeout, bulkTimeout: defaultBulkTimeout, bulkWorkers: defaultBulkWorkers}
	if err := s.checkAccess(ctx); err != nil {
		return nil, err
	}
	if err := s.ensureAliases(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Alias returns the alias of an index kind (mappings.Notices, ...).
func (s *Store) Alias(kind string) string { return s.cfg.Namespace + "-" + kind }

// nextAlias names the notices index a reindex is filling.
func (s *Store) nextAlias() string { return s.cfg.Namespace + "-" + mappings.Notices + "-next" }

// catchUpAlias marks the old notices index of a reindex whose catch-up is
// not done, with the catch-up's query as its filter (Reindex).
func (s *Store) catchUpAlias() string { return s.cfg.Namespace + "-" + mappings.Notices + "-catchup" }

// indexName names a new index of a kind.
func (s *Store) indexName(ix mappings.Index, suffix string) string {
	return fmt.Sprintf("%s-%s-v%d-%s", s.cfg.Namespace, ix.Kind, ix.Version, suffix)
}

// newSuffix is a fresh, sortable index suffix.
func (s *Store) newSuffix() string {
	return strings.ToLower(time.Now().UTC().Format("20060102t150405.000000000"))
}

// ensureAliases creates the first index of each kind when its alias is
// missing, under a fixed name: two processes starting at once create one.
func (s *Store) ensureAliases(ctx context.Context) error {
	all, err := mappings.All()
	if err != nil {
		return err
	}
	for _, ix := range all {
		alias := s.Alias(ix.Kind)
		cur, err := s.aliasIndices(ctx, alias)
		if err == nil && len(cur) == 0 {
			if err = s.createIndex(ctx, ix, s.indexName(ix, "0"), alias, nil); isAlreadyExists(err) {
				err = nil
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// createIndex creates an index from its definition, with alias (as the
// write index) when alias is not "" and settings over the file's, and
// always Config.Replicas replicas.
func (s *Store) createIndex(ctx context.Context, ix mappings.Index, name, alias string, settings map[string]any) error {
	var body map[string]any
	if err := json.Unmarshal(ix.Body, &body); err != nil {
		return fmt.Errorf("elastic: %s mapping: %w", ix.Kind, err)
	}
	if alias != "" {
		body["aliases"] = map[string]any{alias: map[string]any{"is_write_index": true}}
	}
	all, _ := body["settings"].(map[string]any)
	if all == nil {
		all = map[string]any{}
		body["settings"] = all
	}
	maps.Copy(all, settings)
	all["number_of_replicas"] = s.cfg.Replicas
	return s.do(ctx, s.bulkTimeout, http.MethodPut, "/"+name, body, nil)
}

// loadSettings are those of an index bulk-loaded before anyone reads it (a
// register load or copy): no periodic refresh, background translog syncs
// (a crash loses only the load, run again). endLoad puts the file's back.
var loadSettings = map[string]any{"refresh_interval": "-1", "translog.durability": "async"}

// endLoad ends a load into an index created with loadSettings: the file's
// refresh interval and per-request translog syncs back, then a refresh and
// a flush, so that it goes live with nothing a crash could lose.
func (s *Store) endLoad(ctx context.Context, ix mappings.Index, name string) error {
	var body struct {
		Settings map[string]any `json:"settings"`
	}
	if err := json.Unmarshal(ix.Body, &body); err != nil {
		return fmt.Errorf("elastic: %s mapping: %w", ix.Kind, err)
	}
	restore := map[string]any{"refresh_interval": body.Settings["refresh_interval"], "translog.durability": "request"}
	if err := s.do(ctx, s.bulkTimeout, http.MethodPut, "/"+name+"/_settings", map[string]any{"index": restore}, nil); err != nil {
		return fmt.Errorf("elastic: restore the settings of %s after its load: %w", name, err)
	}
	if err := s.refresh(ctx, name); err != nil {
		return err
	}
	return s.do(ctx, s.bulkTimeout, http.MethodPost, "/"+name+"/_flush", nil, nil)
}

// aliasIndices returns the indices an alias points to (nil when none).
func (s *Store) aliasIndices(ctx context.Context, alias string) ([]string, error) {
	var out map[string]any
	err := s.do(ctx, s.timeout, http.MethodGet, "/_alias/"+alias, nil, &out)
	if isNotFound(err) {
		return nil, nil
	}
	return slices.Collect(maps.Keys(out)), err
}

// refresh makes writes to target searchable.
func (s *Store) refresh(ctx context.Context, target string) error {
	return s.do(ctx, s.bulkTimeout, http.MethodPost, "/"+target+"/_refresh", nil, nil)
}

// Drop deletes every index of the namespace (tests and teardown).
func (s *Store) Drop(ctx context.Context) error {
	var rows []struct {
		Index string `json:"index"`
	}
	err := s.do(ctx, s.timeout, http.MethodGet, "/_cat/indices/"+s.cfg.Namespace+"-notices-v*,"+s.cfg.Namespace+"-register-v*?format=json&h=index&expand_wildcards=all", nil, &rows)
	if err != nil && !isNotFound(err) {
		return err
	}
	for _, r := range rows {
		if err := s.deleteIndex(ctx, r.Index); err != nil {
			return err
		}
	}
	s.dataChanged(ctx)
	return nil
}

// deleteIndex deletes an index; one already gone is no error.
func (s *Store) deleteIndex(ctx context.Context, name string) error {
	if err := s.do(ctx, s.bulkTimeout, http.MethodDelete, "/"+name, nil, nil); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}

// esError is an error answer of Elasticsearch.
type esError struct {
	Status int    `json:"-"`
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

func (e *esError) Error() string {
	return fmt.Sprintf("elasticsearch answered %d %s: %s", e.Status, e.Type, e.Reason)
}

// errorOf decodes an error answer (its raw text, trimmed, as the reason
// when it is not one).
func errorOf(status int, raw []byte) *esError {
	var doc struct {
		Error esError `json:"error"`
	}
	if json.Unmarshal(raw, &doc) == nil && doc.Error.Type != "" {
		doc.Error.Status = status
		return &doc.Error
	}
	return &esError{Status: status, Reason: strings.TrimSpace(string(raw))}
}

// classified is e as do returns it: 429 and 5xx are BackendUnavailable.
func (e *esError) classified() error {
	if e.Status == http.StatusTooManyRequests || e.Status >= 500 {
		return unavailable(e)
	}
	return e
}

func isNotFound(err error) bool {
	var e *esError
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

func isAlreadyExists(err error) bool {
	var e *esError
	return errors.As(err, &e) && strings.Contains(e.Type, "already_exists")
}

// unavailable wraps a failure to reach Elasticsearch as
// errs.BackendUnavailable.
func unavailable(err error) error {
	return fmt.Errorf("%w (%v)", errs.New(errs.BackendUnavailable,
		"the search backend (Elasticsearch) cannot be reached or did not answer in time; retry shortly"), err)
}

// do sends one request with a timeout and decodes a JSON answer into out
// (when not nil); body is JSON-encoded unless it is []byte. An unreachable
// or overloaded node or the timeout is BackendUnavailable, another error
// answer an *esError.
func (s *Store) do(ctx context.Context, timeout time.Duration, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(withAttempts(ctx), timeout)
	defer cancel()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	default:
		buf, err := gojson.Marshal(b)
		if err != nil {
			return fmt.Errorf("elastic: encode %s %s: %w", method, path, err)
		}
		r = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, r)
	if err != nil {
		return fmt.Errorf("elastic: %s %s: %w", method, path, err)
	}
	if r != nil {
		if p := strings.SplitN(path, "?", 2)[0]; strings.HasSuffix(p, "_bulk") || strings.HasSuffix(p, "_msearch") {
			req.Header.Set("Content-Type", "application/x-ndjson")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	res, err := s.es.Perform(req)
	if err != nil {
		return unavailable(err)
	}
	defer drainClose(res.Body)
	if res.StatusCode >= 300 {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<16))
		return errorOf(res.StatusCode, raw).classified()
	}
	if out == nil {
		return nil
	}
	rerr, derr := readJSON(res.Body, out)
	switch {
	case rerr != nil && ctx.Err() != nil:
		return unavailable(ctx.Err())
	case rerr != nil:
		return unavailable(fmt.Errorf("elastic: read answer of %s %s: %w", method, path, rerr))
	case derr != nil:
		return fmt.Errorf("elastic: decode answer of %s %s: %w", method, path, derr)
	}
	return nil
}

// drainClose reads an answer to its end and closes it: a chunked answer's
// last chunk is still unread after the JSON, and a body closed before its
// end closes the connection instead of returning it to the pool.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, body)
	_ = body.Close()
}

// readJSON reads r whole into a pooled buffer, then decodes it into out
// with go-json, and returns the read's error or else the decode's: go-json,
// three times encoding/json's speed on a page of notices, spent most of
// its time refilling when it streamed from the body (docs/benchmarks.md,
// 2026-11-24).
func readJSON(r io.Reader, out any) (read, decode error) {
	buf := answerBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledAnswer {
			buf.Reset()
			answerBuffers.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(r); err != nil {
		return err, nil
	}
	return nil, gojson.Unmarshal(buf.Bytes(), out)
}

// answerBuffers holds the buffers answers are read into, up to
// maxPooledAnswer bytes (a bigger answer's buffer is let go).
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledAnswer = 1 << 20
