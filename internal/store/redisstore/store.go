// Package redisstore is the scale-mode backend of accounts, watches, quotas,
// the identifier sets of the bulk screen and the watch match log, on Redis
// (go-redis v9). Every key lives under "{<namespace>}:"; docs/redis.md
// describes the layout. Notices themselves live elsewhere (Elasticsearch in
// scale mode): what this package needs of them goes through NoticeSource.
//
// Redis must run with appendonly yes: accounts, watches and the match log
// are kept only here.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/account"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/secretbox"
	"github.com/noticesd/noticesd/internal/store/publog"
)

// NoticeSource is what the store needs of the notices: the Elasticsearch
// store implements it in scale mode (the SQLite store does too, for tests).
type NoticeSource interface {
	// LatestSeq is the highest notice_seq published (package publog):
	// every notice at or below it is readable through this source.
	LatestSeq(ctx context.Context) (int64, error)
	// NoticesBySeq returns the notices with the given seqs in that order
	// (a seq no notice has is left out).
	NoticesBySeq(ctx context.Context, seqs []int64) ([]notice.Notice, error)
	// MatchingSeqs returns up to limit seqs in (after, through], ascending,
	// of the notices passing f whose acn or abn is one of keys (at most
	// MaxTerms of them); keys nil means every notice passing f.
	MatchingSeqs(ctx context.Context, keys []string, f notice.Filter, after, through int64, limit int) ([]int64, error)
	// NoticeSummaries calls fn with every notice up to seq through,
	// ascending, each with at least its summary's fields
	// (publog.EncodeSummary), from one view of the notices (the screen
	// copy's load). The notice fn is given may be reused once fn returns.
	NoticeSummaries(ctx context.Context, through int64, fn func(*notice.Notice) error) error
	// CarriedIdentifiers returns which of ids (ACNs or ABNs) a stored
	// notice carries as its acn or abn.
	CarriedIdentifiers(ctx context.Context, ids []string) (map[string]bool, error)
}

// MaxTerms is the most identifiers the store passes to one
// NoticeSource.MatchingSeqs call: Elasticsearch's terms query stops at
// 65,536 values.
const MaxTerms = 65536

// Store is the Redis backend. It is safe for concurrent use; several
// processes may share one Redis.
type Store struct {
	rdb          redis.UniversalClient
	name         string // the namespace
	ns           string // its keys' prefix, "{<namespace>}:" (keyspace.Prefix)
	source       NoticeSource
	plans        map[string]account.Plan
	clock        func() time.Time
	matchOnRead  bool // not Options.NoMatchOnRead
	filters      filterCache
	secrets      *secretbox.Box
	screenCopy   *ScreenCopy   // the replica's copy of what the bulk screen reads
	log          *publog.Log   // the namespace's writer lease and publish log
	replicaCache replicaCount  // decides whether a write waits for a replica (durable.go)
	leaseRenewal time.Duration // the constant leaseRenewal; tests shorten it
	trashScanned atomic.Bool   // this process adopted an older version's trash (scanTrash)
	owners       sync.Map      // watch id -> account id, read from wacct (accountsOf)
}

// Options configure a Store. The zero value of each field is its default.
type Options struct {
	// Plans are the account plans; default account.DefaultPlans().
	Plans map[string]account.Plan
	// Clock stamps accounts; default time.Now.
	Clock func() time.Time
	// Secrets seals webhook secrets at rest (NOTICES_SECRET_KEY); without
	// it the store refuses to store a webhook secret.
	Secrets *secretbox.Box
	// NoMatchOnRead stops Matches from matching pending arrivals itself
	// before reading; then only workers (MatchArrivals) fill the logs.
	NoMatchOnRead bool
	// ScreenCopy keeps an in-memory copy of the register beside the
	// notice summaries, which are always held (NOTICES_SCREEN_COPY;
	// ScreenCopy().Start loads it). Until it is loaded, and while it is of
	// another register generation, screens read the register from Redis.
	ScreenCopy bool
	// Log is the namespace's writer lease and publish log, the notice
	// store's; default publog.New with its defaults.
	Log *publog.Log
}

// New returns a store on rdb with every key under "{namespace}:".
func New(rdb redis.UniversalClient, namespace string, source NoticeSource, o Options) (*Store, error) {
	if namespace == "" || strings.ContainsAny(namespace, ": \t\n") {
		return nil, fmt.Errorf("redisstore: namespace %q must be non-empty without ':' or spaces (NOTICES_NAMESPACE)", namespace)
	}
	if source == nil {
		return nil, errors.New("redisstore: a NoticeSource is required")
	}
	s := &Store{rdb: rdb, name: namespace, ns: keyspace.Prefix(namespace), source: source, plans: o.Plans, clock: o.Clock,
		matchOnRead: !o.NoMatchOnRead, secrets: o.Secrets, leaseRenewal: leaseRenewal, log: o.Log}
	if s.log == nil {
		s.log = publog.New(rdb, namespace, publog.Options{})
	}
	s.screenCopy = newScreenCopy(s, o.ScreenCopy)
	if s.plans == nil {
		s.plans = account.DefaultPlans()
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	return s, nil
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.fail("ping", s.rdb.Ping(ctx).Err())
}

// fail wraps a Redis error: an unreachable or stalled server becomes
// errs.BackendUnavailable (HTTP 503), anything else a plain error (500).
func (s *Store) fail(what string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errs.As(err); ok {
		return err
	}
	if unreachable(err) {
		return errs.New(errs.BackendUnavailable, "Redis (accounts, API keys, quotas and watches) does not answer, so the service could not %s; retry shortly", what)
	}
	return fmt.Errorf("redisstore: %s: %w", what, err)
}

// casRun runs script with the keys and arguments read returns until it
// answers other than -1. What the script checks was read in Go before
// (every key a script touches is in KEYS, so keys named by stored values
// are read first), and -1 says it changed meanwhile: read again.
func (s *Store) casRun(ctx context.Context, what string, script *redis.Script, read func() ([]string, []any, error)) (int, error) {
	for {
		keys, args, err := read()
		if err != nil {
			return 0, err
		}
		if n, err := script.Run(ctx, s.rdb, keys, args...).Int(); err != nil || n != -1 {
			return n, s.fail(what, err)
		}
	}
}

// scanPages walks a SCAN-family cursor from 0 until it comes back to 0:
// scan reads the page at a cursor, page is called with each.
func scanPages(scan func(cursor uint64) ([]string, uint64, error), page func([]string) error) error {
	for cursor := uint64(0); ; {
		items, next, err := scan(cursor)
		if err == nil {
			err = page(items)
		}
		if err != nil || next == 0 {
			return err
		}
		cursor = next
	}
}

// anys returns ss as script or command arguments.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, v := range ss {
		out[i] = v
	}
	return out
}

// unreachable reports whether err says Redis cannot answer now: a lost
// connection or a hang, a server still loading its data, or a Redis
// Cluster refusing every command (CLUSTERDOWN) while a lost master's
// slots wait for its replica's promotion: a node that answers refuses
// then, so a request of an account on a surviving master is 503 too; and
// the redirections and refusals of a failover or reshard under way.
func unreachable(err error) bool {
	var ne net.Error
	// A pool timeout: every connection is busy on a Redis that does not
	// answer (a hang), the same outage seen from a loaded process.
	if errors.As(err, &ne) || errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "EOF", "i/o timeout", "LOADING", "CLUSTERDOWN", "broken pipe", "no route to host"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	// A failover or a reshard under way: a slot's owner changed more often
	// than go-redis follows it (MOVED, ASK), a multi-key command over a
	// slot being moved (TRYAGAIN), a demoted primary (READONLY) or a
	// replica cut from its master (MASTERDOWN).
	for _, s := range []string{"MOVED ", "ASK ", "TRYAGAIN", "READONLY", "MASTERDOWN"} {
		if strings.HasPrefix(msg, s) {
			return true
		}
	}
	return false
}
