package elastic

import (
	"bytes"
	"context"
	"fmt"
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
	Body    []byte
	// What names the document in error messages (a source_id, a line).
	What string
	// Pos is the document's position in its batch (for store.BatchError).
	Pos int
}

// Bounds of a bulk request's size (flushBytes).
const (
	minFlushBytes = 256 << 10
	maxFlushBytes = 8 << 20
)

// flushBytes sizes the bulk requests of one call of total bytes so that
// every worker gets a share (one request per worker when it fits under
// maxFlushBytes): a batch sent as one request keeps one Elasticsearch
// write thread busy while the others idle.
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
// by bytes). Items refused with 429 (a full write queue) are sent again
// with a growing pause; a version conflict on an external_gte write (a
// newer version is already stored) and, when create, a create of an
// existing document are not failures. Any other refused item fails the
// call, naming up to ten of them with Elasticsearch's reason.
func (s *Store) bulk(ctx context.Context, ops []bulkOp) error {
	pause := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		failed, err := s.bulkOnce(ctx, ops)
		if err != nil {
			return err
		}
		var retry []bulkOp
		var hard []bulkFailure
		for _, f := range failed {
			if f.status == 429 {
				retry = append(retry, f.op)
			} else {
				hard = append(hard, f)
			}
		}
		if len(hard) > 0 || (len(retry) > 0 && attempt == bulkRetries) {
			hard = append(hard, failuresOf(retry)...)
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
			if len(retry) > 0 && len(hard) == len(retry) {
				return unavailable(fmt.Errorf("elasticsearch kept refusing %d writes as overloaded (429): %s", len(retry), b.String()))
			}
			return &refused{items: hard, msg: fmt.Sprintf("elastic: %d of %d writes refused: %s", len(hard), len(ops), b.String())}
		}
		if len(retry) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause *= 2
		ops = retry
	}
}

// refused is a bulk load some of whose items Elasticsearch refused (the
// others are written).
type refused struct {
	items []bulkFailure
	msg   string
}

func (r *refused) Error() string { return r.msg }

func failuresOf(ops []bulkOp) []bulkFailure {
	out := make([]bulkFailure, len(ops))
	for i, op := range ops {
		out[i] = bulkFailure{op: op, status: 429, reason: "rejected, write queue full"}
	}
	return out
}

func (s *Store) bulkOnce(ctx context.Context, ops []bulkOp) ([]bulkFailure, error) {
	var (
		mu       sync.Mutex
		failed   []bulkFailure
		flushErr error
	)
	total := 0
	for i := range ops {
		total += len(ops[i].Body)
	}
	bi, err := esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client:     s.es,
		NumWorkers: s.cfg.BulkWorkers,
		FlushBytes: flushBytes(total, s.cfg.BulkWorkers),
		Timeout:    s.cfg.BulkTimeout,
		OnError: func(_ context.Context, err error) {
			mu.Lock()
			defer mu.Unlock()
			if flushErr == nil {
				flushErr = err
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("elastic: bulk indexer: %w", err)
	}
	bctx, cancel := context.WithTimeout(ctx, s.cfg.BulkTimeout)
	defer cancel()
	for i := range ops {
		op := ops[i]
		item := esutil.BulkIndexerItem{
			Index:      op.Index,
			Action:     op.Action,
			DocumentID: op.ID,
			Body:       bytes.NewReader(op.Body),
			OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if flushErr == nil {
						flushErr = err
					}
					return
				}
				if res.Status == 409 && (op.Version > 0 || op.Action == "create") {
					return // a newer version, or the document, is already there
				}
				failed = append(failed, bulkFailure{op: op, status: res.Status, reason: res.Error.Type + ": " + res.Error.Reason})
			},
		}
		if op.Version > 0 {
			v := op.Version
			item.Version = &v
			item.VersionType = "external_gte"
		}
		if err := bi.Add(bctx, item); err != nil {
			_ = bi.Close(context.Background())
			return nil, unavailable(err)
		}
	}
	if err := bi.Close(bctx); err != nil {
		return nil, unavailable(err)
	}
	if flushErr != nil {
		return nil, unavailable(flushErr)
	}
	return failed, nil
}
