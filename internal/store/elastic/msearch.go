package elastic

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	gojson "github.com/goccy/go-json"
)

// msearchItem is one search of an _msearch.
type msearchItem struct {
	index string
	body  obj
}

// msearchBody is the NDJSON of an _msearch of items, with no partial results.
func msearchBody(items []msearchItem) ([]byte, error) {
	var buf bytes.Buffer
	enc := gojson.NewEncoder(&buf) // a value a line
	for _, it := range items {
		if err := enc.Encode(obj{"index": it.index, "allow_partial_search_results": false}); err != nil {
			return nil, err
		}
		if err := enc.Encode(it.body); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// msearch sends items in one _msearch and returns the checked answers in order.
func (s *Store) msearch(ctx context.Context, items []msearchItem) ([]searchAnswer, error) {
	body, err := msearchBody(items)
	if err != nil {
		return nil, fmt.Errorf("elastic: encode an _msearch: %w", err)
	}
	var ans struct {
		Responses []struct {
			searchAnswer
			Status int      `json:"status"`
			Error  *esError `json:"error"`
		} `json:"responses"`
	}
	if err := s.do(ctx, s.timeout, http.MethodPost, "/_msearch", body, &ans); err != nil {
		return nil, searchError(err)
	}
	if len(ans.Responses) != len(items) {
		return nil, fmt.Errorf("elastic: _msearch of %d searches answered %d", len(items), len(ans.Responses))
	}
	out := make([]searchAnswer, len(items))
	for i, r := range ans.Responses {
		if r.Error != nil {
			r.Error.Status = r.Status
			return nil, searchError(r.Error.classified())
		}
		if err := r.complete(); err != nil {
			return nil, err
		}
		out[i] = r.searchAnswer
	}
	return out, nil
}
