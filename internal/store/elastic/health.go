package elastic

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/mappings"
)

// IndexHealth is one index behind an alias.
type IndexHealth struct {
	Alias   string `json:"alias"`
	Index   string `json:"index"`
	Version int    `json:"version"`
	Docs    int64  `json:"docs"`
}

// Health is what /health can show of the search backend.
type Health struct {
	Cluster           string        `json:"cluster"` // green, yellow or red
	Indices           []IndexHealth `json:"indices"`
	NewestCollectedAt string        `json:"newest_collected_at"` // of the highest notice_seq ("": none)
	NewestAge         float64       `json:"newest_age_seconds"`  // seconds since then (-1: none)
}

var versionInName = regexp.MustCompile(`-v(\d+)-[^-]*$`)

// Health reports the cluster status, the aliases' indices and the newest notice.
func (s *Store) Health(ctx context.Context) (Health, error) {
	h := Health{NewestAge: -1, Indices: []IndexHealth{}}
	var err error
	if h.Cluster, err = s.clusterStatus(ctx); err != nil {
		return h, err
	}
	for _, kind := range []string{mappings.Notices, mappings.Register} {
		alias := s.Alias(kind)
		names, err := s.aliasIndices(ctx, alias)
		if err != nil {
			return h, err
		}
		for _, name := range names {
			var count struct { // no allow_partial_search_results: _shards checked
				shardStatus
				Count int64 `json:"count"`
			}
			if err := s.do(ctx, s.timeout, http.MethodGet, "/"+name+"/_count", nil, &count); err != nil {
				return h, err
			}
			if err := count.complete(); err != nil {
				return h, err
			}
			ih := IndexHealth{Alias: alias, Index: name, Docs: count.Count}
			if m := versionInName.FindStringSubmatch(name); m != nil {
				ih.Version, _ = strconv.Atoi(m[1])
			}
			h.Indices = append(h.Indices, ih)
		}
	}
	var newest noticePage
	if err := s.searchRead(ctx, "/"+s.Alias(mappings.Notices)+"/_search", obj{"size": 1, "sort": []obj{{"notice_seq": "desc"}},
		"_source": []string{"notice.collected_at"}, "track_total_hits": false}, &newest); err != nil {
		return h, err
	}
	if ns := notices(newest.Hits.Hits); len(ns) > 0 && ns[0].CollectedAt != "" {
		h.NewestCollectedAt = ns[0].CollectedAt
		if t, err := time.Parse(time.RFC3339Nano, ns[0].CollectedAt); err == nil {
			h.NewestAge = s.cfg.Now().Sub(t).Seconds()
		}
	}
	return h, nil
}

// Ping checks that the cluster answers and is not red (/health's "search").
func (s *Store) Ping(ctx context.Context) error {
	status, err := s.clusterStatus(ctx)
	if err != nil {
		return err
	}
	if status == "red" {
		return errs.New(errs.BackendUnavailable, "the Elasticsearch cluster is red (primary shards unassigned)")
	}
	return nil
}

// clusterStatus is the cluster's status: green, yellow or red.
func (s *Store) clusterStatus(ctx context.Context) (string, error) {
	var cluster struct {
		Status string `json:"status"`
	}
	err := s.do(ctx, s.timeout, http.MethodGet, "/_cluster/health", nil, &cluster)
	return cluster.Status, err
}
