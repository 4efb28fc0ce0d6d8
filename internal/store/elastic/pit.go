package elastic

import (
	"context"
	"fmt"
	"net/http"

	"github.com/noticesd/noticesd/mappings"
)

// pitKeepAlive is how long a point in time outlives its last search: one
// page must be read and handled within it.
const pitKeepAlive = "2m"

// pointInTime is a point in time on the notices alias: its searches see one view.
type pointInTime struct {
	s  *Store
	id string
}

// openPIT opens a point in time (what names it in errors), refused partial.
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

// search runs body in the point in time into out, keeping its id current.
func (p *pointInTime) search(ctx context.Context, path string, body obj, out shardAnswer) error {
	body["pit"] = obj{"id": p.id, "keep_alive": pitKeepAlive}
	if err := p.s.searchRead(ctx, path, body, out); err != nil {
		return err
	}
	if id := out.shards().PitID; id != "" {
		p.id = id
	}
	return nil
}

// close closes the point in time.
func (p *pointInTime) close() error {
	return p.s.do(context.Background(), p.s.cfg.Timeout, http.MethodDelete, "/_pit", obj{"id": p.id}, nil)
}
