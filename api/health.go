package api

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/notice"
)

// Collector states reported by /health.
const (
	CollectorDisabled = "disabled" // no NOTICES_SOURCE configured
	CollectorIdle     = "idle"     // waiting for the next run; the last one succeeded
	CollectorRunning  = "running"  // a run is in progress
	CollectorFailing  = "failing"  // the last run failed
)

// CollectorStatus is the collector block of /health. Timestamps are in the
// service's timestamp form (notice.Timestamp) or null.
type CollectorStatus struct {
	State               string  `json:"state"`
	Source              *string `json:"source"`
	LastRunAt           *string `json:"last_run_at"`
	LastSuccessAt       *string `json:"last_success_at"`
	LastError           *string `json:"last_error"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	NoticesCollected    int64   `json:"notices_collected"`
}

// HealthSource reports the collector's state for /health.
type HealthSource interface {
	CollectorStatus(ctx context.Context) CollectorStatus
}

// DisabledCollector is the HealthSource when no source is configured: state
// "disabled", source and every timestamp null, counts 0. A disabled
// collector does not make the service degraded.
type DisabledCollector struct{}

// CollectorStatus implements HealthSource.
func (DisabledCollector) CollectorStatus(context.Context) CollectorStatus {
	return CollectorStatus{State: CollectorDisabled}
}

// MailStatus is the mail block of /health: alert_email mail is "off"
// (NOTICES_SMTP_URL unset) or "on", with the server (host:port, never its
// credentials), the digest time and the queue.
type MailStatus struct {
	State      string  `json:"state"`
	Server     *string `json:"server,omitempty"`
	DigestTime *string `json:"digest_time,omitempty"`
	Pending    *int    `json:"pending,omitempty"`
	Dead       *int    `json:"dead,omitempty"`
	LastError  *string `json:"last_error,omitempty"`
}

// Mail states reported by /health.
const (
	MailOff = "off"
	MailOn  = "on"
)

// MailSource reports alert_email mail for /health; nil means mail is off.
type MailSource interface {
	MailStatus(ctx context.Context) MailStatus
}

// Check probes one backend for /health; nil means reachable.
type Check func(ctx context.Context) error

// SearchSource details a separate search backend for /health.
type SearchSource func(ctx context.Context) (SearchStatus, error)

// SearchStatus is /health's "search" block: the search cluster, the index
// behind each alias with its mapping version and document count, and when
// the newest notice was collected.
type SearchStatus struct {
	// Cluster is the cluster's status: green, yellow or red.
	Cluster string        `json:"cluster"`
	Indices []SearchIndex `json:"indices"`
	// NewestCollectedAt is the collected_at of the notice with the highest
	// notice_seq; NewestAgeSeconds is how long ago that was. Both null
	// when there is no notice.
	NewestCollectedAt *string  `json:"newest_collected_at"`
	NewestAgeSeconds  *float64 `json:"newest_age_seconds"`
}

// SearchNode is one configured node of the search backend (scale mode:
// an Elasticsearch node of NOTICES_ELASTICSEARCH_URL) and whether it
// answers.
type SearchNode struct {
	// Node is the node's host:port, never its credentials.
	Node      string `json:"node"`
	Reachable bool   `json:"reachable"`
}

// SearchNodesSource asks every configured search node whether it answers,
// in the configured order.
type SearchNodesSource func(ctx context.Context) []SearchNode

// SearchIndex is one index behind an alias.
type SearchIndex struct {
	Alias string `json:"alias"`
	Index string `json:"index"`
	// MappingVersion is the mappings/ version the index was created from.
	MappingVersion int   `json:"mapping_version"`
	Docs           int64 `json:"docs"`
}

// Health statuses and check results.
const (
	healthOK          = "ok"
	healthDegraded    = "degraded"
	healthUnavailable = "unavailable"
)

// healthProbeTimeout bounds each backend probe so /health answers promptly
// even when a backend hangs.
const healthProbeTimeout = 5 * time.Second

// healthChecks are the backends /health always reports.
var healthChecks = []string{"search", "store", "queue"}

type healthResponse struct {
	Status    string              `json:"status"`
	Version   string              `json:"version"`
	Commit    string              `json:"commit"`
	Collector CollectorStatus     `json:"collector"`
	Mail      MailStatus          `json:"mail"`
	Index     *notice.IndexStatus `json:"index"`
	// Search details a separate search backend (scale mode); null in the
	// embedded mode, or when it cannot be read (checks.search says so).
	Search *SearchStatus `json:"search"`
	// Redis is the Redis primary in use (scale mode); absent in the
	// embedded mode, or when Redis cannot be reached.
	Redis *RedisStatus `json:"redis,omitempty"`
	// SearchNodes says which configured search nodes answer (scale mode);
	// null in the embedded mode.
	SearchNodes []SearchNode `json:"search_nodes"`
	Checks      checkResults `json:"checks"`
	// Reasons says, one sentence each, why status is not ok; empty when
	// it is.
	Reasons []string `json:"reasons"`
}

// checkResults is the checks block, "ok" or "unavailable" per backend;
// the store is "degraded" when it answers reads but cannot write.
type checkResults struct {
	Search string `json:"search"`
	Store  string `json:"store"`
	Queue  string `json:"queue"`
}

// set records the result of the named check.
func (r *checkResults) set(name, result string) {
	switch name {
	case "search":
		r.Search = result
	case "store":
		r.Store = result
	case "queue":
		r.Queue = result
	}
}

// health is GET /health (no key): 200 with status ok, or degraded when the
// collector is failing or the store answers reads but cannot write (/ready
// fails while that lasts); 503 with status unavailable when a backend
// cannot be reached. reasons says why.
func (s *Server) health(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), s.probeTimeout)
	defer cancel()
	resp := healthResponse{Status: healthOK, Version: s.deps.Build.Version, Commit: s.deps.Build.Commit, Reasons: []string{}}
	// The index status and each backend probe run side by side, each with
	// the whole probe timeout: a backend that hangs makes its own check
	// unavailable, not the others' (they would find the time spent).
	var (
		wg     sync.WaitGroup
		idx    notice.IndexStatus
		idxErr error
		probed = make([]error, len(healthChecks))
		nodes  []SearchNode
	)
	wg.Go(func() { idx, idxErr = s.deps.Notices.IndexStatus(ctx) })
	if s.deps.SearchNodes != nil {
		wg.Go(func() { nodes = s.deps.SearchNodes(ctx) })
	}
	for i, name := range healthChecks {
		if probe, ok := s.deps.Checks[name]; ok && probe != nil {
			wg.Go(func() { probed[i] = probe(ctx) })
		}
	}
	wg.Wait()
	if idxErr == nil {
		resp.Index = &idx
	} else {
		s.log.Warn("health: index status unreadable", "error", idxErr)
	}
	// What follows reads backends found reachable: a fresh deadline, so a
	// probe that hung does not leave them none.
	ctx, cancelRest := context.WithTimeout(c.UserContext(), s.probeTimeout)
	defer cancelRest()
	status := fiber.StatusOK
	for i, name := range healthChecks {
		err := idxErr
		if probe, ok := s.deps.Checks[name]; ok && probe != nil {
			err = probed[i]
			if err != nil {
				s.log.Warn("health: backend unreachable", "check", name, "error", err)
			}
		}
		resp.Checks.set(name, healthOK)
		if err != nil {
			resp.Checks.set(name, healthUnavailable)
			resp.Status = healthUnavailable
			resp.Reasons = append(resp.Reasons, name+" cannot be reached")
			status = fiber.StatusServiceUnavailable
		}
	}
	if resp.Checks.Store == healthOK {
		if err := s.storeWritable(ctx); err != nil {
			s.log.Warn("health: store cannot write", "error", err)
			resp.Checks.Store = healthDegraded
			if resp.Status == healthOK {
				resp.Status = healthDegraded
			}
			resp.Reasons = append(resp.Reasons, "store cannot write: "+err.Error())
		}
	}
	if s.deps.Search != nil && resp.Checks.Search == healthOK {
		if st, err := s.deps.Search(ctx); err == nil {
			resp.Search = &st
		} else {
			s.log.Warn("health: search detail unreadable", "error", err)
		}
	}
	if s.deps.Redis != nil && resp.Checks.Store != healthUnavailable {
		if st, err := s.deps.Redis(ctx); err == nil {
			resp.Redis = &st
		} else {
			s.log.Warn("health: Redis primary unreadable", "error", err)
		}
	}
	// A search node that does not answer leaves the others serving (with
	// replicas, every notice still has a copy: checks.search and
	// search.cluster say whether one is missing), but the cluster has lost
	// its spare.
	resp.SearchNodes = nodes
	for _, n := range nodes {
		if !n.Reachable {
			if resp.Status == healthOK {
				resp.Status = healthDegraded
			}
			resp.Reasons = append(resp.Reasons, "search node "+n.Node+" does not answer")
		}
	}
	resp.Mail = MailStatus{State: MailOff}
	if s.deps.Mail != nil {
		resp.Mail = s.mailProbe.get(s.deps.Now(), func() MailStatus { return s.deps.Mail.MailStatus(ctx) })
	}
	resp.Collector = s.deps.Health.CollectorStatus(ctx)
	resp.Collector.Source = redactSource(resp.Collector.Source)
	if resp.Collector.State == CollectorFailing || resp.Collector.ConsecutiveFailures > 0 {
		if resp.Status == healthOK {
			resp.Status = healthDegraded
		}
		why := "collector failing"
		if e := resp.Collector.LastError; e != nil {
			why += ": " + *e
		}
		resp.Reasons = append(resp.Reasons, why)
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return writeJSON(c, status, resp)
}

// writeProbeEvery is how long a write probe's result is reused: /health
// needs no key, and a flood of it must not become a flood of disk writes.
// The mail queue's counts are reused as long: in the scale mode they are
// read from every account's slot (O(accounts) commands).
const writeProbeEvery = 2 * time.Second

// probe remembers the last result of a check /health makes, so a flood of
// /health is not a flood of the check.
type probe[T any] struct {
	mu    sync.Mutex
	every time.Duration
	at    time.Time
	val   T
	done  bool
}

// get returns the last result of check, running it again when it is older
// than every on the injected clock (or the clock went back).
func (p *probe[T]) get(now time.Time, check func() T) T {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done || now.Sub(p.at) >= p.every || now.Before(p.at) {
		p.val, p.at, p.done = check(), now, true
	}
	return p.val
}

// storeWritable runs Deps.StoreWritable at most once per writeProbeEvery
// (on the injected clock) and returns its last result; nil without a probe.
func (s *Server) storeWritable(ctx context.Context) error {
	if s.deps.StoreWritable == nil {
		return nil
	}
	return s.writeProbe.get(s.deps.Now(), func() error { return s.deps.StoreWritable(ctx) })
}

// redactSource hides credentials a source URL may carry (user info and
// query string): /health needs no key.
func redactSource(src *string) *string {
	if src == nil {
		return nil
	}
	u, err := url.Parse(*src)
	if err != nil || u.Host == "" {
		return src
	}
	if u.User == nil && u.RawQuery == "" {
		return src
	}
	u.User = nil
	u.RawQuery = ""
	r := u.String()
	return &r
}
