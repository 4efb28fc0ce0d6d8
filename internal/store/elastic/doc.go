package elastic

import (
	"encoding/json"
	"fmt"

	"github.com/noticesd/noticesd/internal/notice"
)

// hit is one search hit of a notice search.
type hit struct {
	ID      string          `json:"_id"`
	Version int64           `json:"_version"`
	Source  json.RawMessage `json:"_source"`
	Sort    []any           `json:"sort"`
}

// searchAnswer is the part of a _search answer the store reads.
type searchAnswer struct {
	shardStatus
	Hits struct {
		Total struct {
			Value int64 `json:"value"`
		} `json:"total"`
		Hits []hit `json:"hits"`
	} `json:"hits"`
}

// noticeOf decodes the notice of document id's _source.
func noticeOf(id string, src json.RawMessage) (notice.Notice, error) {
	var d struct {
		Notice notice.Notice `json:"notice"`
	}
	if err := json.Unmarshal(src, &d); err != nil {
		return notice.Notice{}, fmt.Errorf("elastic: decode notice %s: %w", id, err)
	}
	if d.Notice.Practitioners == nil {
		d.Notice.Practitioners = []notice.Practitioner{}
	}
	return d.Notice, nil
}
