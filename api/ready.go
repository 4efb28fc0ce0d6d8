package api

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/noticesd/noticesd/internal/errs"
)

// readyProbeTimeout bounds /ready's probe.
const readyProbeTimeout = 5 * time.Second

// ready is GET /ready (no key), the readiness check: 200 {"status":"ready"}
// once the store is reachable, its schema (migrations, or the indices of
// the scale backend) is in place and it can write; 503 unavailable with the
// reason otherwise. /health stays the detailed report (not a liveness
// probe: it is 503 while a backend cannot be reached).
func (s *Server) ready(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), readyProbeTimeout)
	defer cancel()
	c.Set(fiber.HeaderCacheControl, "no-store")
	// The search nodes are asked beside the readiness check, which they
	// do not decide: one node lost of several leaves the service ready.
	var nodes []SearchNode
	var wg sync.WaitGroup
	if s.deps.SearchNodes != nil {
		wg.Go(func() { nodes = s.deps.SearchNodes(ctx) })
	}
	err := s.readyCheck(ctx)
	wg.Wait()
	if err != nil {
		s.log.Warn("ready: not ready", "error", err)
		c.Set(fiber.HeaderRetryAfter, "5")
		return errs.New(errs.Unavailable, "the service is not ready: the store cannot be reached or its schema is not in place yet%s; retry, and see the server log if it lasts", nodesSilent(nodes))
	}
	if err := s.storeWritable(ctx); err != nil {
		s.log.Warn("ready: store cannot write", "error", err)
		c.Set(fiber.HeaderRetryAfter, "5")
		return errs.New(errs.Unavailable, "the service is not ready: the store answers reads but cannot write (%v); free space or fix the data directory (GET /health says more)", err)
	}
	answer := readyResponse{Status: "ready", SearchNodes: nodes}
	if s.deps.Redis != nil {
		// Redis answered the probes above; a primary it cannot name (CLIENT
		// INFO refused) leaves the block out rather than the service out.
		if st, err := s.deps.Redis(ctx); err == nil {
			answer.Redis = &st
		} else {
			s.log.Warn("ready: Redis primary unreadable", "error", err)
		}
	}
	return writeJSON(c, fiber.StatusOK, answer)
}

// readyResponse is /ready's answer when ready.
type readyResponse struct {
	Status string `json:"status"`
	// Redis is the Redis primary in use (scale mode).
	Redis *RedisStatus `json:"redis,omitempty"`
	// SearchNodes says which configured search nodes answer (scale mode);
	// left out in the embedded mode.
	SearchNodes []SearchNode `json:"search_nodes,omitempty"`
}

// nodesSilent names, for /ready's message, the search nodes that do not
// answer ("" when all do or there are none).
func nodesSilent(nodes []SearchNode) string {
	var silent, answer []string
	for _, n := range nodes {
		if n.Reachable {
			answer = append(answer, n.Node)
		} else {
			silent = append(silent, n.Node)
		}
	}
	if len(silent) == 0 {
		return ""
	}
	msg := " (Elasticsearch nodes not answering: " + strings.Join(silent, ", ")
	if len(answer) > 0 {
		msg += "; answering: " + strings.Join(answer, ", ")
	}
	return msg + ")"
}

// readyCheck runs Deps.Ready, else every Deps.Checks probe and the index
// status.
func (s *Server) readyCheck(ctx context.Context) error {
	if s.deps.Ready != nil {
		return s.deps.Ready(ctx)
	}
	for _, name := range healthChecks {
		if probe := s.deps.Checks[name]; probe != nil {
			if err := probe(ctx); err != nil {
				return fmt.Errorf("%s cannot be reached", name)
			}
		}
	}
	_, err := s.deps.Notices.IndexStatus(ctx)
	return err
}
