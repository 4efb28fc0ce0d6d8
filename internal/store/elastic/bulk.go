package elastic

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esutil"
)

// bulkOp is one document write of a bulk load.
type bulkOp struct {
	Index   string // index or alias
	Action  string // "index" or "create"
	ID      string // "" lets Elasticsearch choose
	Version int64  // external_gte version when > 0
	// Fenced makes a version conflict a refusal (status 409): the writer
	// lease's epoch is the version, so a newer one means a later writer.
	// Without it a conflict is not a failure (a copy older than the
	// stored document).
	Fenced bool
	Body   []byte
	// What names the document in error messages (a source_id, a line).
	What string
	// Pos is the document's position in its batch (for store.BatchError).
	Pos int
	// Split, when set, gives the op's rows as one write each: a document
	// of several rows that Elasticsearch refuses is sent again row by row
	// (splitRefused), so the error names the row it refuses.
	Split func() []bulkOp
}

// Bounds of a bulk request's size (flushBytes). At most 2 MB, as a
// register load's: a worker sends its first request once it holds that
// much, so a batch's requests go out while the rest of it is queued.
const (
	minFlushBytes = 256 << 10
	maxFlushBytes = 2 << 20
)

// flushBytes sizes the bulk requests of one call of total bytes so that
// every worker gets a share: a batch sent as one request keeps one
// Elasticsearch write thread busy while the others idle.
func flushBytes(total, workers int) int {
	return min(maxFlushBytes, max(minFlushBytes, total/max(1, workers)+1))
}

// bulkRetries is how often items refused with 429 are sent again.
const bulkRetries = 4

// bulkFailure is one item Elasticsearch refused.
type bulkFailure struct {
	op     bulkOp
	status int
	reason string
}

// bulk writes ops through an esutil.BulkIndexer (several workers, flushed
// by bytes); settle retries and reports what stays refused, and add says
// which version conflicts are no failure.
func (s *Store) bulk(ctx context.Context, ops []bulkOp) error {
	failed, err := s.bulkOnce(ctx, ops)
	return s.settle(ctx, len(ops), failed, err)
}

// settle ends a bulk load of n writes whose first attempt refused failed
// (or failed with err, returned as it is): the rows of refused blocks are
// sent again one by one (splitRefused), the items refused with 429, or by
// a write block (writeBlocked), are sent again (up to bulkRetries times,
// with a growing pause), and what is still refused becomes the error.
func (s *Store) settle(ctx context.Context, n int, failed []bulkFailure, err error) error {
	if err == nil {
		failed, err = s.splitRefused(ctx, failed)
	}
	if err != nil {
		return err
	}
	pause := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		var again, hard []bulkFailure
		for _, f := range failed {
			if f.status == 429 || writeBlocked(f) {
				again = append(again, f)
			} else {
				hard = append(hard, f)
			}
		}
		if len(hard) > 0 || (len(again) > 0 && attempt == bulkRetries) {
			hard = append(hard, again...)
			var b strings.Builder
			for i, f := range hard {
				if i == 10 {
					fmt.Fprintf(&b, "; and %d more", len(hard)-10)
					break
				}
				if i > 0 {
					b.WriteString("; ")
				}
				fmt.Fprintf(&b, "%s: %d %s", f.op.What, f.status, f.reason)
			}
			if len(again) > 0 && len(hard) == len(again) && !slices.ContainsFunc(again, writeBlocked) {
				return unavailable(fmt.Errorf("elasticsearch kept refusing %d writes as overloaded (429): %s", len(again), b.String()))
			}
			return &refused{items: hard, msg: fmt.Sprintf("elastic: %d of %d writes refused: %s", len(hard), n, b.String())}
		}
		if len(again) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause *= 2
		if bulkRetryHook != nil {
			bulkRetryHook()
		}
		retry := make([]bulkOp, len(again))
		for i, f := range again {
			retry[i] = f.op
		}
		if failed, err = s.bulkOnce(ctx, retry); err != nil {
			return err
		}
	}
}

// writeBlocked reports whether f was refused by a write block on its
// index, a reindex's catch-up's (docs/elasticsearch.md, "Reindexing", 4):
// sent again through its alias, it reaches the new index.
func writeBlocked(f bulkFailure) bool {
	return f.status == http.StatusForbidden && strings.HasPrefix(f.reason, "cluster_block_exception:") &&
		strings.Contains(f.reason, "index write")
}

// bulkRetryHook, when set by a test, runs before each retry of settle.
var bulkRetryHook func()

// splitRefused sends the rows of every refused op that has them (Split)
// again one by one, and returns the refusals with each such op replaced by
// the refusals of its rows; the others (429s, ops of one document) are
// returned as they are.
func (s *Store) splitRefused(ctx context.Context, failed []bulkFailure) ([]bulkFailure, error) {
	var out []bulkFailure
	for _, f := range failed {
		if f.status == 429 || f.op.Split == nil {
			out = append(out, f)
			continue
		}
		fs, err := s.bulkOnce(ctx, f.op.Split())
		if err != nil {
			return nil, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

// refused is a bulk load some of whose items Elasticsearch refused (the
// others are written).
type refused struct {
	items []bulkFailure
	msg   string
}

func (r *refused) Error() string { return r.msg }

func (s *Store) bulkOnce(ctx context.Context, ops []bulkOp) ([]bulkFailure, error) {
	total := 0
	for i := range ops {
		total += len(ops[i].Body)
	}
	st, err := s.newBulkStream(flushBytes(total, s.bulkWorkers))
	if err != nil {
		return nil, err
	}
	bctx, cancel := context.WithTimeout(ctx, s.bulkTimeout)
	defer cancel()
	for i := range ops {
		if err := st.add(bctx, ops[i]); err != nil {
			_, _ = st.close(context.Background())
			return nil, err
		}
	}
	return st.close(bctx)
}

// bulkStream is an esutil.BulkIndexer whose refused items are collected:
// documents are added one by one and sent in the background by its
// workers; close waits for every request and returns what was refused.
type bulkStream struct {
	bi       esutil.BulkIndexer
	mu       sync.Mutex
	failed   []bulkFailure
	flushErr error
}

// bulkFilterPath trims a bulk response to what is read of it: each item's
// status and error. Every item keeps its status, so the items stay in the
// order of the request (the indexer pairs them by position); the rest of
// a response (index names, ids, versions, shard counts: about 150 bytes
// per document) is neither built by Elasticsearch nor decoded here.
var bulkFilterPath = []string{"errors", "items.*.status", "items.*.error"}

// bulkGrace is how long past Elasticsearch's own bulk timeout (at most,
// and never more than that timeout) a request waits for its answer.
const bulkGrace = 10 * time.Second

// bulkQueue is how many documents each bulk worker's queue holds. At the
// indexer's default of one, every document waited for its worker goroutine
// to be scheduled and most of the time only one request was in flight
// (docs/elasticsearch.md); a request's worth lets a worker fill its next
// request the moment its last one is answered.
const bulkQueue = 4096

// bulkDecoder decodes the indexer's bulk responses as do decodes answers
// (readJSON, go-json) instead of with encoding/json's stream decoder,
// which cost a notice load's client about a second per 1,000,000 items.
type bulkDecoder struct{}

// UnmarshalFromReader implements esutil.BulkResponseJSONDecoder.
func (bulkDecoder) UnmarshalFromReader(r io.Reader, blk *esutil.BulkIndexerResponse) error {
	read, decode := readJSON(r, blk)
	return cmp.Or(read, decode)
}

// flushCancelKey carries a bulk request's cancel func from OnFlushStart to
// OnFlushEnd.
type flushCancelKey struct{}

// newBulkStream starts an indexer of s.bulkWorkers workers, each
// sending a request when it holds flush bytes.
func (s *Store) newBulkStream(flush int) (*bulkStream, error) {
	st := &bulkStream{}
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client:              s.es,
		NumWorkers:          s.bulkWorkers,
		QueueSizeMultiplier: bulkQueue,
		FlushBytes:          flush,
		FilterPath:          bulkFilterPath,
		Decoder:             bulkDecoder{},
		Timeout:             s.bulkTimeout,
		OnError:             func(_ context.Context, err error) { st.fail(err) },
		// The indexer's workers send with a background context, and its
		// Timeout only bounds Elasticsearch's side: on a node that hangs a
		// request (and its worker) would wait for ever after close gave up.
		// Each request gets a deadline a little past the node's own.
		OnFlushStart: func(ctx context.Context) context.Context {
			ctx, cancel := context.WithTimeout(withAttempts(ctx), s.bulkTimeout+min(bulkGrace, s.bulkTimeout))
			return context.WithValue(ctx, flushCancelKey{}, cancel)
		},
		OnFlushEnd: func(ctx context.Context) {
			if cancel, ok := ctx.Value(flushCancelKey{}).(context.CancelFunc); ok {
				cancel()
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("elastic: bulk indexer: %w", err)
	}
	st.bi = bi
	return st, nil
}

func (st *bulkStream) fail(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushErr = cmp.Or(st.flushErr, err)
}

// add queues one write (blocking while every worker is busy, at most
// until ctx ends).
func (st *bulkStream) add(ctx context.Context, op bulkOp) error {
	item := esutil.BulkIndexerItem{
		Index:      op.Index,
		Action:     op.Action,
		DocumentID: op.ID,
		Body:       bytes.NewReader(op.Body),
		OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
			if err != nil {
				st.fail(err)
				return
			}
			if res.Status == 409 && !op.Fenced && (op.Version > 0 || op.Action == "create") {
				return // a newer version, or the document, is already there
			}
			st.mu.Lock()
			defer st.mu.Unlock()
			st.failed = append(st.failed, bulkFailure{op: op, status: res.Status, reason: res.Error.Type + ": " + res.Error.Reason})
		},
	}
	if op.Version > 0 {
		v := op.Version
		item.Version = &v
		item.VersionType = "external_gte"
	}
	if err := st.bi.Add(ctx, item); err != nil {
		return unavailable(err)
	}
	return nil
}

// refusedSoFar reports whether a write has been refused (other than with
// 429) or a request has failed, so a long load can stop early.
func (st *bulkStream) refusedSoFar() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.flushErr != nil {
		return true
	}
	for _, f := range st.failed {
		if f.status != 429 {
			return true
		}
	}
	return false
}

// close sends what is queued, waits for every request (at most until ctx
// ends) and returns the items refused; a request that failed as a whole
// (Elasticsearch unreachable, a timeout) is the error.
func (st *bulkStream) close(ctx context.Context) ([]bulkFailure, error) {
	if err := st.bi.Close(ctx); err != nil {
		return nil, unavailable(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.flushErr != nil {
		return nil, unavailable(st.flushErr)
	}
	return st.failed, nil
}
