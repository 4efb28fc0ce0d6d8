package elastic

import (
	"context"
	"fmt"
	"net/http"

	"github.com/noticesd/noticesd/mappings"
)

// pitKeepAlive is how long a point in time outlives the last search that
// used it: one page must be read and handled within it.
const pitKeepAlive = "2m"

// pointInTime is an open point in time on the notices alias: every search
// in it reads the same view of the index while notices are written and
// refreshed.
type pointInTime struct {
	s  *Store
	id string
}

// openPIT opens a point in time on the notices alias for what (the
// error's wording). One opened without a shard would page without its
// notices: refused, as searches are (searchRead).
func (s *Store) openPIT(ctx context.Context, what string) (*pointInTime, error) {
	var ans struct {
		shardStatus
		ID string `json:"id"`
	}
	err := s.do(ctx, s.cfg.Timeout, http.MethodPost, noPartial("/"+s.Alias(mappings.Notices)+"/_pit?keep_alive="+pitKeepAlive), nil, &ans)
	if p := partialError(err); p != nil {
		err = p
	} else if err == nil {
		err = ans.complete()
	}
	if err != nil {
		return nil, fmt.Errorf("elastic: open point in time for %s: %w", what, err)
	}
	return &pointInTime{s: s, id: ans.ID}, nil
}

// pitAnswer is a search answer in a point in time: with its shard status
// and the point in time's id, which Elasticsearch may renew.
type pitAnswer interface {
	shardAnswer
	pitID() string
}

// pitField is the point in time's id of an answer (pitAnswer).
type pitField struct {
	PitID string `json:"pit_id"`
}

func (f *pitField) pitID() string { return f.PitID }

// searchInto runs body in the point in time (path "/_search" with its
// parameters), decoding the answer into out and keeping the point in
// time's id current.
func (p *pointInTime) searchInto(ctx context.Context, path string, body obj, out pitAnswer) error {
	body["pit"] = obj{"id": p.id, "keep_alive": pitKeepAlive}
	if err := p.s.searchRead(ctx, path, body, out); err != nil {
		return err
	}
	if id := out.pitID(); id != "" {
		p.id = id
	}
	return nil
}

// search is searchInto for an answer of hits.
func (p *pointInTime) search(ctx context.Context, path string, body obj) (*searchAnswer, error) {
	var ans struct {
		searchAnswer
		pitField
	}
	if err := p.searchInto(ctx, path, body, &ans); err != nil {
		return nil, err
	}
	return &ans.searchAnswer, nil
}

// close closes the point in time.
func (p *pointInTime) close() error {
	return p.s.do(context.Background(), p.s.cfg.Timeout, http.MethodDelete, "/_pit", obj{"id": p.id}, nil)
}
