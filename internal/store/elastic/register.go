package elastic

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/mappings"
)

// registerBlockRows is a register document's most rows (mapping version
// 4: a block of consecutive rows, appendRegisterBlock), kept small (5 KB)
// for company views. 16 rows a document loaded twice as fast as one
// (docs/benchmarks.md, 2026-11-24).
const registerBlockRows = 16

// registerRowsOf decodes a register document of any mapping version
// (versions 1 and 2: one row) into its first row's position and its rows;
// with field (acn or abn) set, only those whose field is value, skipping
// undecoded a row whose JSON lacks value's digits quoted: a lookup does not
// decode its block's other 15 rows.
func registerRowsOf(src []byte, field, value string) (int64, []notice.RegisterRow, error) {
	var d struct {
		Row  int64               `json:"row"`
		Data []gojson.RawMessage `json:"data"`
	}
	if err := gojson.Unmarshal(src, &d); err != nil {
		var one struct {
			Row  int64             `json:"row"`
			Data gojson.RawMessage `json:"data"`
		}
		if err := gojson.Unmarshal(src, &one); err != nil {
			return 0, nil, err
		}
		d.Row, d.Data = one.Row, []gojson.RawMessage{one.Data}
	}
	var quoted []byte
	if field != "" && digits(value) {
		quoted = []byte(`"` + value + `"`)
	}
	var rows []notice.RegisterRow
	for _, raw := range d.Data {
		if quoted != nil && !bytes.Contains(raw, quoted) {
			continue
		}
		var r notice.RegisterRow
		if err := gojson.Unmarshal(raw, &r); err != nil {
			return 0, nil, err
		}
		if field == "" || (field == "acn" && r.ACN == value) || (field == "abn" && r.ABN == value) {
			rows = append(rows, r)
		}
	}
	return d.Row, rows, nil
}

// digits reports whether s is non-empty and all ASCII digits.
func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// RegisterLoad is a register replacement in progress: rows go into a new
// index (loadSettings); readers see the old register until Commit.
type RegisterLoad struct {
	s      *Store
	ix     mappings.Index
	index  string
	mu     sync.Mutex
	rows   int64
	done   bool
	stream *bulkStream // sends the rows of every Add in the background
	err    error       // the load's failure, once the stream has ended with one
}

// registerFlushBytes is the size of a register load's bulk requests.
const registerFlushBytes = 2 << 20

var _ store.RegisterLoad = (*RegisterLoad)(nil)

// BeginRegister starts replacing the company register with a new index.
func (s *Store) BeginRegister(ctx context.Context) (store.RegisterLoad, error) {
	return s.beginRegister(ctx)
}

// beginRegister creates a register index to load, after dropStaleLoads.
func (s *Store) beginRegister(ctx context.Context) (*RegisterLoad, error) {
	ix, err := mappings.Load(mappings.Register)
	if err != nil {
		return nil, err
	}
	if err := s.dropStaleLoads(ctx); err != nil {
		return nil, err
	}
	name := s.indexName(ix, s.newSuffix())
	if err := s.createIndex(ctx, ix, name, "", loadSettings); err != nil {
		return nil, fmt.Errorf("elastic: create register index %s: %w", name, err)
	}
	st, err := s.newBulkStream(registerFlushBytes)
	if err != nil {
		return nil, err
	}
	return &RegisterLoad{s: s, ix: ix, index: name, stream: st}, nil
}

// Index names the index the load fills.
func (l *RegisterLoad) Index() string { return l.index }

// Add appends rows to the new register, sent in the background; a refused
// row fails a later Add or Commit, named by its number.
func (l *RegisterLoad) Add(ctx context.Context, rows []notice.RegisterRow) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ended(); err != nil {
		return err
	}
	if l.stream == nil || l.stream.refusedSoFar() {
		return l.finish(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, l.s.bulkTimeout)
	defer cancel()
	for i := 0; i < len(rows); i += registerBlockRows {
		block := rows[i:min(i+registerBlockRows, len(rows))]
		first := l.rows + int64(i)
		body := appendRegisterBlock(make([]byte, 0, 360*len(block)), first, block)
		// No document id: indexed without an id lookup; Commit counts.
		if err := l.stream.add(actx, registerOp(l.index, first, block, body)); err != nil {
			l.abandon()
			l.err = err
			return err
		}
	}
	l.rows += int64(len(rows))
	return nil
}

// abandon stops the load's sending, waiting at most bulkTimeout.
func (l *RegisterLoad) abandon() {
	if l.stream == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.s.bulkTimeout)
	defer cancel()
	_, _ = l.stream.close(ctx)
	l.stream = nil
}

// finish waits for every row sent and settles the refused ones (429s sent
// again), its error naming the rows still refused; then the same again.
func (l *RegisterLoad) finish(ctx context.Context) error {
	if l.stream == nil {
		return l.err
	}
	cctx, cancel := context.WithTimeout(ctx, l.s.bulkTimeout)
	defer cancel()
	failed, err := l.stream.close(cctx)
	l.stream = nil
	l.err = l.s.settle(ctx, int(l.rows), failed, err)
	return l.err
}

// Commit swaps the new register in atomically and deletes the old one.
func (l *RegisterLoad) Commit(ctx context.Context) error { return l.commit(ctx, nil) }

// commit is Commit moving the alias from exactly from (moveAlias; nil:
// from the indices it names now), the indices it moved from deleted.
func (l *RegisterLoad) commit(ctx context.Context, from []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ended(); err != nil {
		return err
	}
	if err := l.finish(ctx); err != nil {
		return err
	}
	if err := l.s.endLoad(ctx, l.ix, l.index); err != nil {
		return err
	}
	held, err := l.s.registerRowCount(ctx, l.index)
	if err != nil {
		return err
	}
	if held != l.rows {
		return fmt.Errorf("elastic: the new register %s holds %d rows where %d were sent; it is not swapped in (run the load again)", l.index, held, l.rows)
	}
	old, err := l.s.moveAlias(ctx, l.s.Alias(mappings.Register), l.index, from, nil)
	if err != nil {
		return err
	}
	l.s.dataChanged(ctx) // drops the kept answers (company filters)
	if err := l.s.dropIndices(ctx, l.s.Alias(mappings.Register), old); err != nil {
		return err
	}
	l.done = true
	return nil
}

// ended is the error of a call after Commit or Rollback.
func (l *RegisterLoad) ended() error {
	if l.done {
		return fmt.Errorf("elastic: register load %s is already committed or rolled back; begin a new one", l.index)
	}
	return nil
}

// registerOp writes a register block (body, its encoding) into index;
// refused, it splits into a write per row, decoded from body.
func registerOp(index string, first int64, block []notice.RegisterRow, body []byte) bulkOp {
	op := bulkOp{Index: index, Action: "index", Body: body, What: blockName(first, block)}
	if len(block) > 1 {
		op.Split = func() []bulkOp {
			_, rows, err := registerRowsOf(body, "", "")
			if err != nil {
				return []bulkOp{{Index: index, Action: "index", Body: body, What: op.What}}
			}
			ops := make([]bulkOp, len(rows))
			for i := range rows {
				at := first + int64(i)
				ops[i] = registerOp(index, at, rows[i:i+1], appendRegisterBlock(nil, at, rows[i:i+1]))
			}
			return ops
		}
	}
	return op
}

// blockName names a block by its rows (1-based) and first ACN.
func blockName(first int64, block []notice.RegisterRow) string {
	from := strconv.FormatInt(first+1, 10)
	if len(block) == 1 {
		return "register row " + from + " (ACN " + block[0].ACN + ")"
	}
	return "register rows " + from + "-" + strconv.FormatInt(first+int64(len(block)), 10) + " (from ACN " + block[0].ACN + ")"
}

// registerRowCount is how many rows a register index holds (v1-2: a row a document).
func (s *Store) registerRowCount(ctx context.Context, index string) (int64, error) {
	var ans aggsPage
	body := obj{"size": 0, "track_total_hits": false, "aggs": obj{
		"rows":   obj{"sum": obj{"field": "rows"}},
		"single": obj{"missing": obj{"field": "rows"}},
	}}
	if err := s.searchRead(ctx, "/"+index+"/_search", body, &ans); err != nil {
		return 0, fmt.Errorf("elastic: count the rows of register %s: %w", index, err)
	}
	n := ans.Aggregations["single"].DocCount
	if v := ans.Aggregations["rows"].Value; v != nil {
		n += int64(*v)
	}
	return n, nil
}

// Rollback abandons the load and deletes its index; the old register stays.
func (l *RegisterLoad) Rollback() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return nil
	}
	l.done = true
	l.abandon()
	if err := l.s.deleteIndex(context.Background(), l.index); err != nil {
		return fmt.Errorf("elastic: drop abandoned register index %s: %w", l.index, err)
	}
	return nil
}

// moveAlias points alias at index alone, taking it off exactly the indices
// from (nil: those it names now), in one _aliases call with extra actions,
// and returns the others it named. Each removal must find the alias, so a
// move by someone else since fails the whole call.
func (s *Store) moveAlias(ctx context.Context, alias, index string, from []string, extra []map[string]any) ([]string, error) {
	cur := from
	if cur == nil {
		var err error
		if cur, err = s.aliasIndices(ctx, alias); err != nil {
			return nil, err
		}
	}
	actions := []map[string]any{{"add": map[string]any{"index": index, "alias": alias, "is_write_index": true}}}
	var old []string
	for _, o := range cur {
		if o != index {
			old = append(old, o)
			actions = append(actions, map[string]any{"remove": map[string]any{"index": o, "alias": alias, "must_exist": true}})
		}
	}
	actions = append(actions, extra...)
	if err := s.do(ctx, s.bulkTimeout, http.MethodPost, "/_aliases", map[string]any{"actions": actions}, nil); err != nil {
		return nil, fmt.Errorf("elastic: move alias %s to %s: %w", alias, index, err)
	}
	return old, nil
}

// dropIndices deletes indices an alias no longer points to.
func (s *Store) dropIndices(ctx context.Context, alias string, old []string) error {
	for _, o := range old {
		if err := s.deleteIndex(ctx, o); err != nil {
			return fmt.Errorf("elastic: alias %s moved, but deleting the old index %s failed (delete it by hand): %w", alias, o, err)
		}
	}
	return nil
}

// staleLoadAge is how old an unaliased register index must be to be taken
// for a killed load's (a national load takes minutes).
const staleLoadAge = 6 * time.Hour

// dropStaleLoads deletes the unaliased register indices older than staleLoadAge.
func (s *Store) dropStaleLoads(ctx context.Context) error {
	var indices map[string]struct {
		Aliases  map[string]any `json:"aliases"`
		Settings struct {
			Index struct {
				Created string `json:"creation_date"`
			} `json:"index"`
		} `json:"settings"`
	}
	err := s.do(ctx, s.timeout, http.MethodGet, "/"+s.cfg.Namespace+"-"+mappings.Register+"-v*?expand_wildcards=all&filter_path=*.aliases,*.settings.index.creation_date", nil, &indices)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("elastic: list the register indices: %w", err)
	}
	cutoff := s.cfg.Now().Add(-staleLoadAge).UnixMilli()
	for name, ix := range indices {
		if ms, err := strconv.ParseInt(ix.Settings.Index.Created, 10, 64); err != nil || ms > cutoff || len(ix.Aliases) > 0 {
			continue
		}
		if err := s.deleteIndex(ctx, name); err != nil {
			return fmt.Errorf("elastic: delete %s, a register index left by a load that did not finish: %w", name, err)
		}
	}
	return nil
}

// RegisterIndices returns the register alias's indices (RegisterIndexer).
func (s *Store) RegisterIndices(ctx context.Context) ([]string, error) {
	return s.aliasIndices(ctx, s.Alias(mappings.Register))
}

// namesChunk is the most ACNs one RegisterNames query looks up.
const namesChunk = 10000

// RegisterNames returns the name of each of acns as the bulk screen names a
// company: its first current row's, else its first row's, else "".
func (s *Store) RegisterNames(ctx context.Context, acns []string) ([]string, error) {
	out := make([]string, len(acns))
	for lo := 0; lo < len(acns); lo += namesChunk {
		part := acns[lo:min(lo+namesChunk, len(acns))]
		at := make(map[string][]int, len(part)) // a block holds other ACNs' rows too
		for i, a := range part {
			at[a] = append(at[a], lo+i)
		}
		decided := make(map[string]bool, len(part)) // a current row named it
		seen := make(map[string]bool, len(part))
		body := obj{"query": obj{"terms": obj{"acn": part}}, "sort": []obj{{"row": "asc"}}, "_source": []string{"row", "data"}}
		err := pages(ctx, s, s.Alias(mappings.Register), body, 1<<30, nil, func(hs []hit) error {
			for _, h := range hs {
				_, rows, err := registerRowsOf(h.Source, "", "")
				if err != nil {
					return fmt.Errorf("elastic: decode register document %s: %w", h.ID, err)
				}
				for _, r := range rows {
					where, ok := at[r.ACN]
					if !ok || decided[r.ACN] || (seen[r.ACN] && !r.IsCurrent()) {
						continue
					}
					seen[r.ACN] = true
					decided[r.ACN] = r.IsCurrent()
					for _, i := range where {
						out[i] = r.CompanyName
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
