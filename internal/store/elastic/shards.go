package elastic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/noticesd/noticesd/internal/errs"
)

// shardStatus is the part of a search-type answer (_search, _count,
// _msearch's, _pit) that says whether every shard answered: a 200 may lack
// a failed or timed-out shard's hits. PitID: a point in time's (pit.go).
type shardStatus struct {
	PitID    string `json:"pit_id"`
	TimedOut bool   `json:"timed_out"`
	Shards   struct {
		Total    int `json:"total"`
		Failed   int `json:"failed"`
		Failures []struct {
			Index  string `json:"index"`
			Shard  int    `json:"shard"`
			Reason struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"reason"`
		} `json:"failures"`
	} `json:"_shards"`
}

// shardAnswer is an answer that carries its shardStatus.
type shardAnswer interface{ shards() *shardStatus }

func (st *shardStatus) shards() *shardStatus { return st }

// complete returns nil when every shard answered in time, else the
// partial-answer error: nothing may act on an answer missing notices.
func (st *shardStatus) complete() error {
	switch {
	case st.Shards.Failed > 0:
		detail := fmt.Sprintf("%d of %d shards failed", st.Shards.Failed, st.Shards.Total)
		if len(st.Shards.Failures) > 0 {
			f := st.Shards.Failures[0]
			detail += fmt.Sprintf("; %s[%d]: %s: %s", f.Index, f.Shard, f.Reason.Type, f.Reason.Reason)
		}
		return partial(errors.New(detail))
	case st.TimedOut:
		return partial(errors.New("the search timed out on some shards"))
	}
	return nil
}

// partial is the error of a search Elasticsearch could answer only in part.
func partial(detail error) error {
	return fmt.Errorf("%w (%v)", errs.New(errs.BackendUnavailable,
		"the search backend (Elasticsearch) could not read every shard, so the answer would leave notices out; retry shortly, and if it persists check the cluster's health"), detail)
}

// searchRead sends one search-type request (a _search or _pit path)
// asking for no partial results (allow_partial_search_results=false: a
// shard that fails, or is missing, fails the whole search), decodes the
// answer into out and checks that every shard answered: a partial answer
// is backend_unavailable.
func (s *Store) searchRead(ctx context.Context, path string, body any, out shardAnswer) error {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	if err := s.do(ctx, s.timeout, http.MethodPost, path+sep+"allow_partial_search_results=false", body, out); err != nil {
		return searchError(err)
	}
	return out.shards().complete()
}

// searchError explains a refused search: a shard failed, so the search
// would be partial (Elasticsearch refusing a partial answer, searchRead:
// "Partial shards failure", with the failed shards' status, such as 400;
// missing shards are a 503), or else our query translation is wrong.
func searchError(err error) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	var e *esError
	if errors.As(err, &e) && e.Type == "search_phase_execution_exception" && e.Reason == "Partial shards failure" {
		return partial(e)
	}
	return fmt.Errorf("elastic: search refused by Elasticsearch (a query translation bug; please report the request): %w", err)
}
