package elastic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/mappings"
)

// TestRegisterLoadSettings: a register load fills its new index with load
// settings (no periodic refresh, background translog syncs) and puts the
// mapping file's settings back before the alias moves to it, so the live
// register syncs every write and refreshes as configured.
func TestRegisterLoadSettings(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	settingsOf := func(index string) map[string]any {
		t.Helper()
		var out map[string]struct {
			Settings struct {
				Index map[string]any `json:"index"`
			} `json:"settings"`
		}
		if err := s.do(ctx, s.timeout, http.MethodGet, "/"+index+"/_settings?flat_settings=false", nil, &out); err != nil {
			t.Fatal(err)
		}
		return out[index].Settings.Index
	}
	l, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	index := l.(*RegisterLoad).Index()
	during := settingsOf(index)
	if during["refresh_interval"] != "-1" || during["translog"].(map[string]any)["durability"] != "async" {
		t.Errorf("during the load: refresh_interval %v, translog %v; want -1 and async", during["refresh_interval"], during["translog"])
	}
	if err := l.Add(ctx, storetest.RegisterRows()); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	live, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil || len(live) != 1 || live[0] != index {
		t.Fatalf("register alias points to %v (%v), want [%s]", live, err, index)
	}
	after := settingsOf(index)
	if _, ok := after["refresh_interval"]; ok {
		t.Errorf("after the load refresh_interval is %v, want the default (register.json sets none)", after["refresh_interval"])
	}
	if tl, _ := after["translog"].(map[string]any); tl != nil && tl["durability"] != "request" {
		t.Errorf("after the load translog durability is %v, want request", tl["durability"])
	}
	held, err := s.registerRowCount(ctx, s.Alias(mappings.Register))
	if err != nil {
		t.Fatal(err)
	}
	if held != int64(len(storetest.RegisterRows())) {
		t.Errorf("the committed register holds %d searchable rows, want %d", held, len(storetest.RegisterRows()))
	}
}

// TestRegisterLoadRefusedRow: rows are sent in the background, so a row
// Elasticsearch refuses fails the load at Commit (or a later Add), named
// by its row number, and the old register stays.
func TestRegisterLoadRefusedRow(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	rows := storetest.RegisterRows()
	l, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	bad := rows[0]
	bad.ACN = strings.Repeat("9", 40000) // over Lucene's term limit: refused
	second := []notice.RegisterRow{rows[1], bad}
	err = l.Add(ctx, second)
	if err == nil {
		err = l.Commit(ctx)
	}
	want := "register row " + strconv.Itoa(len(rows)+2) + " "
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("load with an oversized ACN: %v, want an error naming %q", err, want)
	}
	if err := l.Commit(ctx); err == nil {
		t.Error("a failed load committed on a second try")
	}
	if err := l.Rollback(); err != nil {
		t.Fatal(err)
	}
	live, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil || len(live) != 1 || live[0] == l.(*RegisterLoad).Index() {
		t.Errorf("register alias points to %v (%v) after a failed load", live, err)
	}
}

// TestStaleRegisterLoadDropped: a register load that was killed leaves its
// new index with no alias. The next load deletes such an index once it is
// older than staleLoadAge, and keeps a younger one (a load that may still
// be running) and the live register.
func TestStaleRegisterLoadDropped(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	ix, err := mappings.Load(mappings.Register)
	if err != nil {
		t.Fatal(err)
	}
	killed := s.indexName(ix, "killedload")
	if err := s.createIndex(ctx, ix, killed, "", loadSettings); err != nil {
		t.Fatal(err)
	}
	exists := func(index string) bool {
		t.Helper()
		err := s.do(ctx, s.timeout, http.MethodHead, "/"+index, nil, nil)
		if err != nil && !isNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	live, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil || len(live) != 1 {
		t.Fatalf("register alias: %v, %v", live, err)
	}
	begin := func(s *Store) {
		t.Helper()
		l, err := s.BeginRegister(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
	begin(s)
	if !exists(killed) {
		t.Fatalf("a load deleted %s, an unaliased index created just now (a load that may still be running)", killed)
	}
	later := *s
	later.cfg.Now = func() time.Time { return time.Now().Add(staleLoadAge + time.Minute) }
	begin(&later)
	if exists(killed) {
		t.Errorf("%s, left by a killed load over %s ago, is still there after the next load began", killed, staleLoadAge)
	}
	if !exists(live[0]) {
		t.Errorf("the live register index %s was deleted", live[0])
	}
}

// blockRegister is a register of 40 rows in which company 1 has names at
// rows 15, 16 (either side of the first block boundary) and 35, and ABN
// 51000000002 is held by companies 2 (rows 3 and 33) and 3 (row 20).
func blockRegister() []notice.RegisterRow {
	rows := make([]notice.RegisterRow, 40)
	for i := range rows {
		acn := fmt.Sprintf("%09d", 100+i)
		rows[i] = notice.RegisterRow{CompanyName: fmt.Sprintf("FILLER %d PTY LTD", i), ACN: acn, ABN: "51" + acn, Status: "REGD"}
	}
	own := func(i int, acn, abn, name string) {
		rows[i].ACN, rows[i].ABN, rows[i].CompanyName = acn, abn, name
	}
	own(15, "000000001", "", "ONE OLDEST PTY LTD")
	own(16, "000000001", "", "ONE OLD PTY LTD")
	own(35, "000000001", "", "ONE PTY LTD")
	own(3, "000000002", "51000000002", "TWO OLD PTY LTD")
	own(33, "000000002", "51000000002", "TWO PTY LTD")
	own(20, "000000003", "51000000002", "THREE PTY LTD")
	return rows
}

func rowNames(rows []notice.RegisterRow) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.CompanyName)
	}
	return out
}

// checkBlockRegister reads blockRegister's companies from s's register.
func checkBlockRegister(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []struct {
		field, value string
		want         []string
	}{
		{"acn", "000000001", []string{"ONE OLDEST PTY LTD", "ONE OLD PTY LTD", "ONE PTY LTD"}},
		{"acn", "000000002", []string{"TWO OLD PTY LTD", "TWO PTY LTD"}},
		{"abn", "51000000002", []string{"TWO OLD PTY LTD", "THREE PTY LTD", "TWO PTY LTD"}},
		{"acn", "000000139", []string{"FILLER 39 PTY LTD"}},
		{"abn", "51000000001", []string{}},
		{"acn", "000000999", []string{}},
	} {
		t.Run(c.field+" "+c.value, func(t *testing.T) {
			got, err := s.registerRows(ctx, c.field, c.value, nil)
			if err != nil {
				t.Fatal(err)
			}
			if names := rowNames(got); !slices.Equal(names, c.want) {
				t.Errorf("rows %q, want %q", names, c.want)
			}
		})
	}
	held, err := s.registerRowCount(ctx, s.Alias(mappings.Register))
	if err != nil || held != 40 {
		t.Errorf("the register holds %d rows (%v), want 40", held, err)
	}
}

// TestRegisterBlocks: register rows are stored registerBlockRows to a
// document, in blocks that do not cross a batch; a read by ACN or ABN
// returns exactly the rows carrying it, in file order, wherever the blocks
// fall (a company's names either side of a block boundary, a batch
// boundary, an ABN held by two companies).
func TestRegisterBlocks(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	rows := blockRegister()
	l, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Batches of 18 and 22 rows: blocks of 16, 2, 16, 6.
	for _, b := range [][]notice.RegisterRow{rows[:18], rows[18:]} {
		if err := l.Add(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var count struct {
		Count int `json:"count"`
	}
	if err := s.do(ctx, s.timeout, http.MethodGet, "/"+s.Alias(mappings.Register)+"/_count", nil, &count); err != nil {
		t.Fatal(err)
	}
	if count.Count != 4 {
		t.Errorf("the register has %d documents, want 4 blocks (16, 2, 16, 6 rows)", count.Count)
	}
	checkBlockRegister(t, s)
}

// TestReindexPacksRegisterVersion2: a register of mapping version 2 (one
// row a document) stays readable, and `noticesd reindex` packs it into the
// blocks of the current mapping, every row kept in file order.
func TestReindexPacksRegisterVersion2(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	cur, err := mappings.Load(mappings.Register)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(cur.Body, &body); err != nil {
		t.Fatal(err)
	}
	m := body["mappings"].(map[string]any)
	m["_meta"] = map[string]any{"version": 2}
	delete(m["properties"].(map[string]any), "rows")
	v2 := cur
	v2.Version = 2
	if v2.Body, err = json.Marshal(body); err != nil {
		t.Fatal(err)
	}
	v2Index := s.indexName(v2, "0")
	if err := s.createIndex(ctx, v2, v2Index, "", nil); err != nil {
		t.Fatal(err)
	}
	var ops []bulkOp
	for i, r := range blockRegister() {
		doc, err := json.Marshal(registerDoc{Row: int64(i), ACN: r.ACN, ABN: r.ABN, Data: r})
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, bulkOp{Index: v2Index, Action: "index", Body: doc, What: "v2 row"})
	}
	if err := s.bulk(ctx, ops); err != nil {
		t.Fatal(err)
	}
	if err := s.refresh(ctx, v2Index); err != nil {
		t.Fatal(err)
	}
	old, err := s.moveAlias(ctx, s.Alias(mappings.Register), v2Index, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.dropIndices(ctx, s.Alias(mappings.Register), old); err != nil {
		t.Fatal(err)
	}
	t.Run("version 2", func(t *testing.T) { checkBlockRegister(t, s) })

	res, err := s.Reindex(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.RegisterCopied != 40 || !strings.Contains(res.Register, fmt.Sprintf("-register-v%d-", cur.Version)) {
		t.Fatalf("reindex: %+v, want 40 register rows copied into a version %d index", res, cur.Version)
	}
	var count struct {
		Count int `json:"count"`
	}
	if err := s.do(ctx, s.timeout, http.MethodGet, "/"+res.Register+"/_count", nil, &count); err != nil {
		t.Fatal(err)
	}
	if count.Count != 3 {
		t.Errorf("the reindexed register has %d documents, want 3 blocks (16, 16, 8 rows)", count.Count)
	}
	t.Run("reindexed", func(t *testing.T) { checkBlockRegister(t, s) })
}

// TestRegisterNames: the current name of each ACN is that of its first row
// marked current, else of its first row, as the embedded store and Redis's
// named bit decide it, wherever the rows fall among the blocks (a block
// holds other companies' rows too, and one company's rows may span
// blocks); an ACN the register lacks, or asked twice, is answered in place.
func TestRegisterNames(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	row := func(acn, name, current string) notice.RegisterRow {
		return notice.RegisterRow{CompanyName: name, ACN: acn, CurrentNameIndicator: current}
	}
	var rows []notice.RegisterRow
	rows = append(rows, row("100000001", "ONE FORMER", ""), row("100000002", "TWO FIRST", ""))
	for i := range 20 { // fillers: the later rows go to another block
		rows = append(rows, row(fmt.Sprintf("2%08d", i), "FILLER", "Y"))
	}
	rows = append(rows,
		row("100000001", "ONE NOW", "Y"),
		row("100000001", "ONE LATER CURRENT", "y"),
		row("100000002", "TWO SECOND", ""),
		row("100000003", "", "Y"),
		row("100000003", "THREE FORMER", ""))
	storetest.LoadRegister(t, storetest.Backend{Register: s}, rows)
	acns := []string{"100000001", "999999999", "100000002", "100000003", "100000001"}
	got, err := s.RegisterNames(ctx, acns)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ONE NOW", "", "TWO FIRST", "", "ONE NOW"}
	if !slices.Equal(got, want) {
		t.Errorf("RegisterNames(%v) = %q, want %q", acns, got, want)
	}
}
