package testservers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Settle waits until the Elasticsearch node at url has run no segment
// merge for quiet in a row (checked every second, for at most limit) and
// returns how long it waited. A benchmark calls it before timing a load or
// a read mix: the merges that follow a bulk load keep both processors of a
// small machine busy (8-18 s after a 1,000,000-notice load here), and
// would otherwise be charged to whatever runs next. A node whose merge
// statistics cannot be read is an error, never a node at rest.
func Settle(url string, quiet, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	var calm time.Duration
	for calm < quiet {
		if time.Since(start) > limit {
			return time.Since(start), fmt.Errorf("testservers: Elasticsearch at %s still merging after %s", url, limit)
		}
		n, err := Merging(url)
		if err != nil {
			return time.Since(start), err
		}
		if n == 0 {
			calm += time.Second
		} else {
			calm = 0
		}
		time.Sleep(time.Second)
	}
	return time.Since(start), nil
}

// Merging returns the number of segment merges running on the nodes of
// the Elasticsearch cluster at url.
func Merging(url string) (int, error) {
	resp, err := http.Get(url + "/_nodes/stats/indices/merge")
	if err != nil {
		return 0, fmt.Errorf("testservers: node merge statistics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("testservers: node merge statistics: %s: %s", resp.Status, body)
	}
	var st struct {
		Nodes map[string]struct {
			Indices struct {
				Merges *struct {
					Current int `json:"current"`
				} `json:"merges"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, fmt.Errorf("testservers: node merge statistics: %w", err)
	}
	if len(st.Nodes) == 0 {
		return 0, errors.New("testservers: node merge statistics name no node")
	}
	n := 0
	for id, node := range st.Nodes {
		if node.Indices.Merges == nil {
			return 0, fmt.Errorf("testservers: node merge statistics: node %s has none", id)
		}
		n += node.Indices.Merges.Current
	}
	return n, nil
}
