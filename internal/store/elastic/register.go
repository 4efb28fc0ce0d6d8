package elastic

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/mappings"
)

// registerDoc is one register row as indexed: row is its position in the
// file (the order of names), acn and abn are searched, data is the row.
type registerDoc struct {
	Row  int64              `json:"row"`
	ACN  string             `json:"acn"`
	ABN  string             `json:"abn"`
	Data notice.RegisterRow `json:"data"`
}

// RegisterLoad is a register replacement in progress: rows go into a new
// versioned index, created with load settings (no periodic refresh,
// background translog syncs: nobody reads it yet); Commit puts the
// mapping file's settings back, refreshes and flushes it, and moves the register alias to it
// in one _aliases call, then deletes the old index. Readers see the old
// register until then.
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

// registerFlushBytes is the size of a register load's bulk requests
// (smaller requests, more of them in flight: see Config.BulkWorkers).
const registerFlushBytes = 2 << 20

var _ store.RegisterLoad = (*RegisterLoad)(nil)

// BeginRegister starts replacing the company register with a new index.
func (s *Store) BeginRegister(ctx context.Context) (store.RegisterLoad, error) {
	ix, name, err := s.newRegisterIndex(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.newBulkStream(registerFlushBytes)
	if err != nil {
		return nil, err
	}
	return &RegisterLoad{s: s, ix: ix, index: name, stream: st}, nil
}

// Index names the index the load fills.
func (l *RegisterLoad) Index() string { return l.index }

// Add appends rows to the new register. The rows are queued to the load's
// bulk indexer, whose workers send them while the caller reads the next
// ones; a row Elasticsearch refuses fails a later Add or Commit, named by
// its row number.
func (l *RegisterLoad) Add(ctx context.Context, rows []notice.RegisterRow) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return fmt.Errorf("elastic: register load %s is already committed or rolled back; begin a new one", l.index)
	}
	if l.stream == nil || l.stream.refusedSoFar() {
		return l.finish(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, l.s.cfg.BulkTimeout)
	defer cancel()
	for i := range rows {
		r := &rows[i]
		row := l.rows + int64(i)
		body := appendRegisterDoc(make([]byte, 0, 512), row, r)
		// No document id: nothing reads register rows by id (reads search
		// acn or abn, in row order), and Elasticsearch indexes a document
		// whose id it chooses without first looking the id up. Commit
		// checks that the index holds exactly the rows sent.
		op := bulkOp{Index: l.index, Action: "index", Body: body,
			What: "register row " + strconv.FormatInt(row+1, 10) + " (ACN " + r.ACN + ")"}
		if err := l.stream.add(actx, op); err != nil {
			l.abandon()
			l.err = err
			return err
		}
	}
	l.rows += int64(len(rows))
	return nil
}

// abandon stops the load's bulk indexer, waiting at most BulkTimeout for
// the requests under way.
func (l *RegisterLoad) abandon() {
	if l.stream == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.s.cfg.BulkTimeout)
	defer cancel()
	_, _ = l.stream.close(ctx)
	l.stream = nil
}

// finish waits for every row sent and settles the refused ones (429s sent
// again); its error names the rows still refused.
// Once it has run, it returns the same answer again.
func (l *RegisterLoad) finish(ctx context.Context) error {
	if l.stream == nil {
		return l.err
	}
	cctx, cancel := context.WithTimeout(ctx, l.s.cfg.BulkTimeout)
	defer cancel()
	failed, err := l.stream.close(cctx)
	l.stream = nil
	if err == nil {
		err = l.s.settle(ctx, int(l.rows), failed)
	}
	l.err = err
	return err
}

// Commit swaps the new register in atomically and deletes the old one.
func (l *RegisterLoad) Commit(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return fmt.Errorf("elastic: register load %s is already committed or rolled back; begin a new one", l.index)
	}
	if err := l.finish(ctx); err != nil {
		return err
	}
	if err := l.s.endLoad(ctx, l.ix, l.index); err != nil {
		return err
	}
	var count struct {
		Count int64 `json:"count"`
	}
	if err := l.s.do(ctx, l.s.cfg.Timeout, http.MethodGet, "/"+l.index+"/_count", nil, &count); err != nil {
		return err
	}
	if count.Count != l.rows {
		return fmt.Errorf("elastic: the new register %s holds %d rows where %d were sent; it is not swapped in (run the load again)", l.index, count.Count, l.rows)
	}
	if err := l.s.registerLive(ctx, l.index); err != nil {
		return err
	}
	l.done = true
	return nil
}

// newRegisterIndex creates the index a register load or a reindex fills,
// from the current mapping file and with loadSettings, after deleting what
// killed loads left (dropStaleLoads).
func (s *Store) newRegisterIndex(ctx context.Context) (mappings.Index, string, error) {
	ix, err := mappings.Load(mappings.Register)
	if err != nil {
		return ix, "", err
	}
	if _, err := s.dropStaleLoads(ctx); err != nil {
		return ix, "", err
	}
	name := s.indexName(ix, s.newSuffix())
	if err := s.createIndex(ctx, ix, name, "", loadSettings); err != nil {
		return ix, "", fmt.Errorf("elastic: create register index %s: %w", name, err)
	}
	return ix, name, nil
}

// registerLive moves the register alias to a loaded index (deleting the
// one it leaves) and, as company filters resolve through the register,
// drops the answers kept from before (dataChanged).
func (s *Store) registerLive(ctx context.Context, index string) error {
	return s.registerLiveFrom(ctx, index, nil)
}

// registerLiveFrom is registerLive, moving the alias only if it still names
// exactly the indices from (nil: whatever it names now); otherwise the
// _aliases call fails and nothing changes.
func (s *Store) registerLiveFrom(ctx context.Context, index string, from []string) error {
	old, err := s.moveAliasFrom(ctx, s.Alias(mappings.Register), index, from, nil)
	if err != nil {
		return err
	}
	s.dataChanged(ctx)
	return s.dropIndices(ctx, s.Alias(mappings.Register), old)
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
	err := l.s.do(context.Background(), l.s.cfg.BulkTimeout, http.MethodDelete, "/"+l.index, nil, nil)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("elastic: drop abandoned register index %s: %w", l.index, err)
	}
	return nil
}

// moveAlias points alias at index alone, in one _aliases call (with extra
// actions appended), and returns the other indices it pointed to.
func (s *Store) moveAlias(ctx context.Context, alias, index string, extra []map[string]any) ([]string, error) {
	return s.moveAliasFrom(ctx, alias, index, nil, extra)
}

// moveAliasFrom is moveAlias taking alias off exactly the indices from
// (nil: those it names now). Each removal must find the alias there, so a
// move by someone else since from was read fails the whole call.
func (s *Store) moveAliasFrom(ctx context.Context, alias, index string, from []string, extra []map[string]any) ([]string, error) {
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
			// must_exist: a concurrent move makes this call fail instead
			// of undoing the other.
			actions = append(actions, map[string]any{"remove": map[string]any{"index": o, "alias": alias, "must_exist": true}})
		}
	}
	actions = append(actions, extra...)
	if err := s.do(ctx, s.cfg.BulkTimeout, http.MethodPost, "/_aliases", map[string]any{"actions": actions}, nil); err != nil {
		return nil, fmt.Errorf("elastic: move alias %s to %s: %w", alias, index, err)
	}
	return old, nil
}

// dropIndices deletes indices an alias no longer points to.
func (s *Store) dropIndices(ctx context.Context, alias string, old []string) error {
	for _, o := range old {
		if err := s.do(ctx, s.cfg.BulkTimeout, http.MethodDelete, "/"+o, nil, nil); err != nil && !isNotFound(err) {
			return fmt.Errorf("elastic: alias %s moved, but deleting the old index %s failed (delete it by hand): %w", alias, o, err)
		}
	}
	return nil
}

// staleLoadAge is how old a register index with no alias must be before a
// new load or reindex takes it for one left by a load that was killed
// (a load of the national register takes minutes; one still running
// after this long is not waited for) and deletes it.
const staleLoadAge = 6 * time.Hour

// dropStaleLoads deletes the namespace's register indices that no alias
// points to and that were created over staleLoadAge ago: what a killed
// register load or reindex left. A load in progress has no alias either,
// which is why only old ones go. It returns the indices it deleted.
func (s *Store) dropStaleLoads(ctx context.Context) ([]string, error) {
	var rows []struct {
		Index   string `json:"index"`
		Created string `json:"creation.date"`
	}
	pattern := s.ns + "-" + mappings.Register + "-v*"
	err := s.do(ctx, s.cfg.Timeout, http.MethodGet, "/_cat/indices/"+pattern+"?format=json&h=index,creation.date&expand_wildcards=all", nil, &rows)
	if err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("elastic: list the register indices: %w", err)
	}
	var aliased map[string]struct {
		Aliases map[string]any `json:"aliases"`
	}
	if err := s.do(ctx, s.cfg.Timeout, http.MethodGet, "/"+pattern+"/_alias?expand_wildcards=all", nil, &aliased); err != nil && !isNotFound(err) {
		return nil, fmt.Errorf("elastic: read the register indices' aliases: %w", err)
	}
	cutoff := s.now().Add(-staleLoadAge).UnixMilli()
	var dropped []string
	for _, r := range rows {
		ms, err := strconv.ParseInt(r.Created, 10, 64)
		if err != nil || ms > cutoff {
			continue
		}
		if a, ok := aliased[r.Index]; !ok || len(a.Aliases) > 0 {
			continue
		}
		if err := s.do(ctx, s.cfg.BulkTimeout, http.MethodDelete, "/"+r.Index, nil, nil); err != nil && !isNotFound(err) {
			return dropped, fmt.Errorf("elastic: delete %s, a register index left by a load that did not finish: %w", r.Index, err)
		}
		dropped = append(dropped, r.Index)
	}
	return dropped, nil
}
