package elastic

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/mappings"
)

// hitOf is one search hit, its _source decoded as S.
type hitOf[S any] struct {
	ID      string `json:"_id"`
	Version int64  `json:"_version"`
	Source  S      `json:"_source"`
	Sort    []any  `json:"sort"`
}

// answer is the part of a _search answer the store reads.
type answer[S any] struct {
	shardStatus
	Hits struct {
		Total struct {
			Value int64 `json:"value"`
		} `json:"total"`
		Hits []hitOf[S] `json:"hits"`
	} `json:"hits"`
}

// noticeDoc is a notice document's _source as noticeSource (or part of it) reads it.
type noticeDoc struct {
	Notice notice.Notice `json:"notice"`
}

type (
	hit          = hitOf[json.RawMessage]  // a hit decoded later (noticeOf, registerRowsOf)
	searchAnswer = answer[json.RawMessage] // a search of such hits
	// noticePage is a search answer of notices, decoded straight into
	// notices in one pass: most of a search's own CPU.
	noticePage = answer[noticeDoc]
)

// notice is d's notice, its practitioners never null.
func (d noticeDoc) notice() notice.Notice {
	if d.Notice.Practitioners == nil {
		d.Notice.Practitioners = []notice.Practitioner{}
	}
	return d.Notice
}

// notices returns the notices of hits.
func notices(hs []hitOf[noticeDoc]) []notice.Notice {
	ns := make([]notice.Notice, len(hs))
	for i := range hs {
		ns[i] = hs[i].Source.notice()
	}
	return ns
}

// noticeOf decodes the notice of document id's _source.
func noticeOf(id string, src json.RawMessage) (notice.Notice, error) {
	var d noticeDoc
	if err := json.Unmarshal(src, &d); err != nil {
		return notice.Notice{}, fmt.Errorf("elastic: decode notice %s: %w", id, err)
	}
	return d.notice(), nil
}

// pitKeepAlive is how long a point in time outlives its last search: one
// page must be read and handled within it.
const pitKeepAlive = "2m"

// cursor reads the hits of body (query, sort ending on a unique field,
// _source) page by page with search_after, up to max hits, size a page:
// on index, or in the point in time pit (openPIT), whose searches see one
// view. first, when set, is the first page's answer (pageBody), read
// beforehand in an _msearch (Company).
type cursor[S any] struct {
	s          *Store
	index, pit string // pit: the point in time's id, kept current ("": none)
	body       obj
	size, max  int
	read       int
	after      []any
	done       bool
	first      *answer[S]
}

// pageBody is body's page of size hits after after (nil: the first).
func pageBody(body obj, size int, after []any) obj {
	b := obj{"size": size, "track_total_hits": false}
	maps.Copy(b, body)
	if after != nil {
		b["search_after"] = after
	}
	return b
}

// next returns the next page's hits, none once every one was read.
func (c *cursor[S]) next(ctx context.Context) ([]hitOf[S], error) {
	if c.done || c.read >= c.max {
		return nil, nil
	}
	size := min(c.size, c.max-c.read)
	ans := c.first
	c.first = nil
	if ans == nil {
		ans = new(answer[S])
		if err := c.search(ctx, pageBody(c.body, size, c.after), ans); err != nil {
			return nil, err
		}
	}
	hs := ans.Hits.Hits
	c.read += len(hs)
	c.done = len(hs) < size
	if len(hs) > 0 {
		c.after = hs[len(hs)-1].Sort
	}
	return hs, nil
}

// search runs body on the cursor's index or in its point in time (keeping
// its id current) into out (searchRead).
func (c *cursor[S]) search(ctx context.Context, body obj, out shardAnswer) error {
	prefix := "/" + c.index
	if c.pit != "" {
		prefix = ""
		body["pit"] = obj{"id": c.pit, "keep_alive": pitKeepAlive}
	}
	order, _ := c.body["sort"].([]obj)
	if err := c.s.searchRead(ctx, searchPath(prefix, order), body, out); err != nil {
		return err
	}
	if id := out.shards().PitID; id != "" {
		c.pit = id
	}
	return nil
}

// close closes the cursor's point in time.
func (c *cursor[S]) close() error {
	return c.s.do(context.Background(), c.s.timeout, http.MethodDelete, "/_pit", obj{"id": c.pit}, nil)
}

// each hands fn the cursor's hits page by page.
func (c *cursor[S]) each(ctx context.Context, fn func([]hitOf[S]) error) error {
	for {
		hs, err := c.next(ctx)
		if err != nil || len(hs) == 0 {
			return err
		}
		if err := fn(hs); err != nil {
			return err
		}
	}
}

// pages hands fn the hits of body on index page by page (cursor), up to
// max; first, when not nil, is the first page's answer.
func pages[S any](ctx context.Context, s *Store, index string, body obj, max int, first *answer[S], fn func([]hitOf[S]) error) error {
	return (&cursor[S]{s: s, index: index, body: body, size: scanPage, max: max, first: first}).each(ctx, fn)
}

// openPIT opens a point in time on the notices alias (what names it in
// errors), refused partial (searchRead).
func (s *Store) openPIT(ctx context.Context, what string) (string, error) {
	var ans struct {
		shardStatus
		ID string `json:"id"`
	}
	if err := s.searchRead(ctx, "/"+s.Alias(mappings.Notices)+"/_pit?keep_alive="+pitKeepAlive, nil, &ans); err != nil {
		return "", fmt.Errorf("elastic: open point in time for %s: %w", what, err)
	}
	return ans.ID, nil
}
