package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store/elastic/esdoc"
	"github.com/noticesd/noticesd/internal/store/storetest"
	"github.com/noticesd/noticesd/mappings"
)

// synthNotice is notice i of a synthetic feed, ready for UpsertNotices.
func synthNotice(prefix string, i int) notice.Notice {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 37 * time.Minute)
	acn := fmt.Sprintf("%09d", 100000000+i)
	n := notice.Notice{
		SourceID: fmt.Sprintf("%s-%06d", prefix, i), PublishedAt: notice.Timestamp(at),
		ACN: &acn, CompanyName: fmt.Sprintf("COMPANY %d PTY LTD", i), NoticeType: "Notice of meeting of creditors",
		NoticeCode: "MCR", NoticePurpose: "Meeting", State: []string{"NSW", "VIC", "QLD"}[i%3], Status: "In Liquidation",
		Text: fmt.Sprintf("A meeting of the creditors of company %d will be held.", i), Practitioners: []notice.Practitioner{},
	}
	n.ID = notice.IDFor(n.SourceID)
	n.PublishedDate = notice.PublishedDate(at)
	return n
}

func synthBatch(prefix string, from, n int) []notice.Notice {
	out := make([]notice.Notice, n)
	for i := range out {
		out[i] = synthNotice(prefix, from+i)
	}
	return out
}

// TestReindexUnderLoad: a reindex moves both aliases to new indices while a
// read loop and an ingest run; no read fails, no notice is lost (those
// written during the copy, between the copy and the swap, and updated
// ones), the old indices are gone.
func TestReindexUnderLoad(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	const initial = 3000
	for start := 0; start < initial; start += 1000 {
		if _, err := s.UpsertNotices(ctx, synthBatch("A", start, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	storetest.LoadRegister(t, storetest.Backend{Register: s}, storetest.RegisterRows())
	oldNotices, err := s.aliasIndices(ctx, s.Alias(mappings.Notices))
	if err != nil {
		t.Fatal(err)
	}
	oldRegister, err := s.aliasIndices(ctx, s.Alias(mappings.Register))
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, readErrs, shortReads atomic.Int64
	var firstReadErr atomic.Value
	wg.Add(1)
	go func() { // read loop
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			p, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{State: []string{"NSW", "VIC", "QLD"}}, Sort: notice.SortPublishedDesc, Limit: 10})
			reads.Add(1)
			if err != nil {
				readErrs.Add(1)
				firstReadErr.CompareAndSwap(nil, err.Error())
			} else if p.Total < initial {
				shortReads.Add(1)
			}
			if _, err := s.Company(ctx, storetestACN()); err != nil {
				readErrs.Add(1)
				firstReadErr.CompareAndSwap(nil, err.Error())
			}
		}
	}()
	var ingested atomic.Int64
	wg.Add(1)
	go func() { // concurrent ingest of new notices, 50 at a time
		defer wg.Done()
		for b := 0; ; b++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.UpsertNotices(ctx, synthBatch("B", b*50, 50)); err != nil {
				t.Errorf("ingest during reindex: %v", err)
				return
			}
			ingested.Add(50)
		}
	}()
	// Between the copy and the swap: new notices and an update of a copied
	// one, written while the new index is not yet live.
	updated := synthNotice("A", 7)
	updated.Text = "A meeting of the creditors was adjourned sine die."
	reindexHook = func() {
		if _, err := s.UpsertNotices(ctx, append(synthBatch("C", 0, 20), updated)); err != nil {
			t.Errorf("ingest between copy and swap: %v", err)
		}
	}
	defer func() { reindexHook = nil }()

	res, err := s.Reindex(ctx, nil)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("reindex: %v", err)
	}
	if readErrs.Load() > 0 || shortReads.Load() > 0 {
		t.Errorf("%d of %d reads failed (first: %v), %d saw fewer than %d notices", readErrs.Load(), reads.Load(), firstReadErr.Load(), shortReads.Load(), initial)
	}
	if res.NoticesCopied < initial || res.RegisterCopied != int64(len(storetest.RegisterRows())) {
		t.Errorf("copied %d notices and %d register rows, want at least %d and %d", res.NoticesCopied, res.RegisterCopied, initial, len(storetest.RegisterRows()))
	}
	// Every notice is there, in the new index.
	want := int64(initial) + ingested.Load() + 20
	st, err := s.IndexStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Notices != want {
		t.Errorf("after reindex %d notices, want %d (%d ingested during it)", st.Notices, want, ingested.Load())
	}
	got, err := s.Notice(ctx, updated.ID)
	if err != nil || got.Text != updated.Text {
		t.Errorf("update made before the swap: text %q (%v), want %q", got.Text, err, updated.Text)
	}
	for _, c := range []struct {
		kind, want string
		old        []string
	}{{mappings.Notices, res.Notices, oldNotices}, {mappings.Register, res.Register, oldRegister}} {
		now, err := s.aliasIndices(ctx, s.Alias(c.kind))
		if err != nil || len(now) != 1 || now[0] != c.want {
			t.Errorf("alias %s points to %v (%v), want [%s]", s.Alias(c.kind), now, err, c.want)
		}
		for _, o := range c.old {
			if err := s.do(ctx, time.Second*5, "HEAD", "/"+o, nil, nil); !isNotFound(err) {
				t.Errorf("old index %s still there (%v)", o, err)
			}
		}
	}
	if next, _ := s.aliasIndices(ctx, s.nextAlias()); len(next) > 0 {
		t.Errorf("alias %s left behind", s.nextAlias())
	}
	if !strings.Contains(res.Notices, "-notices-v") {
		t.Errorf("new index %q is not versioned", res.Notices)
	}
	t.Logf("%d reads, %d notices ingested during the reindex, %d caught up", reads.Load(), ingested.Load(), res.CaughtUp)
}

func storetestACN() ident.ID { return ident.ID{Value: storetest.ACNAlpha, Kind: ident.ACN} }

// TestReindexStoppedAfterSwap: a reindex that stops between the alias swap
// and the end of its catch-up (a crash) leaves the old index behind the
// catch-up alias; the next reindex finishes the catch-up first, so a
// notice written to the old index alone in that window is not lost, and
// the old index goes.
func TestReindexStoppedAfterSwap(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	if _, err := s.UpsertNotices(ctx, synthBatch("S", 0, 200)); err != nil {
		t.Fatal(err)
	}
	late := synthNotice("S", 7)
	var oldIndex string
	afterSwapHook = func(old []string) error {
		if len(old) != 1 {
			t.Errorf("old notices indices %v, want one", old)
			return fmt.Errorf("test: unexpected old indices")
		}
		oldIndex = old[0]
		// A writer that started before the reindex lands an update on the
		// old index only, then the reindex dies.
		var doc struct {
			Source  map[string]any `json:"_source"`
			Version int64          `json:"_version"`
		}
		if err := s.do(ctx, s.timeout, "GET", "/"+oldIndex+"/_doc/"+late.ID, nil, &doc); err != nil {
			return err
		}
		doc.Source["indexed_at"] = time.Now().UnixMilli()
		doc.Source["notice"].(map[string]any)["company_name"] = "LATE WRITE PTY LTD"
		path := fmt.Sprintf("/%s/_doc/%s?version=%d&version_type=external_gte&refresh=true", oldIndex, late.ID, doc.Version+1)
		if err := s.do(ctx, s.timeout, "PUT", path, doc.Source, nil); err != nil {
			return err
		}
		return fmt.Errorf("test: the reindex process died after the swap")
	}
	_, err := s.Reindex(ctx, nil)
	afterSwapHook = nil
	if err == nil || !strings.Contains(err.Error(), "died after the swap") {
		t.Fatalf("first reindex: %v, want it stopped after the swap", err)
	}
	if n, err := s.Notice(ctx, late.ID); err != nil || n.CompanyName == "LATE WRITE PTY LTD" {
		t.Fatalf("before the catch-up the late write must not be visible yet (%+v, %v); the test would prove nothing", n.CompanyName, err)
	}
	if held, err := s.aliasIndices(ctx, s.catchUpAlias()); err != nil || len(held) != 1 || held[0] != oldIndex {
		t.Fatalf("catch-up alias on %v (%v), want the old index %s", held, err, oldIndex)
	}

	res, err := s.Reindex(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.CaughtUp < 1 {
		t.Errorf("second reindex caught up %d notices, want the late one at least", res.CaughtUp)
	}
	if n, err := s.Notice(ctx, late.ID); err != nil || n.CompanyName != "LATE WRITE PTY LTD" {
		t.Fatalf("after the second reindex: %q, %v; want the late write", n.CompanyName, err)
	}
	if held, err := s.aliasIndices(ctx, s.catchUpAlias()); err != nil || len(held) != 0 {
		t.Fatalf("catch-up alias still on %v (%v)", held, err)
	}
	if err := s.do(ctx, s.timeout, "HEAD", "/"+oldIndex, nil, nil); !isNotFound(err) {
		t.Fatalf("old index %s: HEAD gave %v, want not found (deleted)", oldIndex, err)
	}
	total, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{IncludeDeregistration: true}, Sort: notice.SortPublishedDesc, Limit: 1})
	if err != nil || total.Total != 200 {
		t.Fatalf("notices after both reindexes: %d (%v), want 200", total.Total, err)
	}
}

// TestReindexKeepsRegisterLoadedDuringIt: a register load that commits
// while a reindex copies the register is newer than the copy, so the
// reindex must not swap its copy in over it (the load's rows would be
// silently replaced by the older ones): the load's register stays, the
// reindex says so and drops its copy, and the next reindex copies the
// load's register.
func TestReindexKeepsRegisterLoadedDuringIt(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	storetest.LoadRegister(t, storetest.Backend{Register: s}, storetest.RegisterRows())
	renamed := storetest.RegisterRows()
	for i := range renamed {
		if renamed[i].ACN == storetest.ACNAlpha && renamed[i].CurrentNameIndicator == "Y" {
			renamed[i].CompanyName = "ALPHA RELOADED PTY LTD"
		}
	}
	var loaded []string
	registerCopyHook = func() {
		registerCopyHook = nil
		storetest.LoadRegister(t, storetest.Backend{Register: s}, renamed)
		var err error
		if loaded, err = s.aliasIndices(ctx, s.Alias(mappings.Register)); err != nil {
			t.Error(err)
		}
	}
	defer func() { registerCopyHook = nil }()
	res, err := s.Reindex(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "a register load committed during the reindex") {
		t.Fatalf("reindex with a register load committed during its copy: %v; want it to say the load was kept", err)
	}
	name := func() string {
		t.Helper()
		c, err := s.Company(ctx, storetestACN())
		if err != nil || c.Name == nil {
			t.Fatalf("company view: %+v, %v", c, err)
		}
		return *c.Name
	}
	if got := name(); got != "ALPHA RELOADED PTY LTD" {
		t.Fatalf("after the reindex the register says %q; want the load's ALPHA RELOADED PTY LTD (the reindex's older copy was swapped in over it)", got)
	}
	if now, err := s.aliasIndices(ctx, s.Alias(mappings.Register)); err != nil || len(now) != 1 || len(loaded) != 1 || now[0] != loaded[0] {
		t.Fatalf("register alias on %v (%v), want the load's index %v", now, err, loaded)
	}
	if err := s.do(ctx, s.timeout, "HEAD", "/"+res.Register, nil, nil); !isNotFound(err) {
		t.Fatalf("the reindex's register copy %s: HEAD gave %v, want it dropped", res.Register, err)
	}
	if _, err := s.Reindex(ctx, nil); err != nil {
		t.Fatalf("the reindex run again: %v", err)
	}
	if got := name(); got != "ALPHA RELOADED PTY LTD" {
		t.Fatalf("after the second reindex the register says %q; want ALPHA RELOADED PTY LTD", got)
	}
}

// TestReindexFromVersion2: a deployment whose notices index is of mapping
// version 2 (fts analysed by the standard analyzer) keeps answering with
// it, with the standard analyzer's tokens, until `noticesd reindex` moves
// it to the current version; the reindex writes each document anew from
// its notice, so a document folded by an older tokeniser is folded again.
func TestReindexFromVersion2(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	cur, err := mappings.Load(mappings.Notices)
	if err != nil {
		t.Fatal(err)
	}
	v2 := noticesVersion2(t, cur)
	alias := s.Alias(mappings.Notices)
	v2Index := s.indexName(v2, "0")
	if err := s.createIndex(ctx, v2, v2Index, "", nil); err != nil {
		t.Fatal(err)
	}
	old, err := s.moveAlias(ctx, alias, v2Index, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.dropIndices(ctx, alias, old); err != nil {
		t.Fatal(err)
	}

	texts := []string{"W½ HOLDINGS PTY LTD", "W & CO PTY LTD", "\u037f YOT", "日本語 notice"}
	batch := make([]notice.Notice, len(texts))
	for i, text := range texts {
		batch[i] = synthNotice("V", i)
		batch[i].Text = text
	}
	if _, err := s.UpsertNotices(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// The notice with U+037F as an older Fold wrote it, an hour ago (so
	// the reindex's copy, not its catch-up, moves it): lower-cased
	// (unicode61 does not fold U+037F).
	stale, err := s.Notice(ctx, batch[2].ID)
	if err != nil {
		t.Fatal(err)
	}
	// Its folded text, the only lower-case "yot" in the document, as the
	// older Fold wrote it.
	body := esdoc.AppendNotice(nil, &stale, time.Now().Add(-time.Hour).UnixMilli())
	folded := []byte(`"` + query.Fold(stale.Text) + `"`)
	older := bytes.ReplaceAll(folded, []byte("\u037f"), []byte("\u03f3"))
	if bytes.Count(body, folded) != 1 || bytes.Equal(older, folded) {
		t.Fatalf("the document of %q holds its folded text %s %d times, want once, with U+037F", stale.Text, folded, bytes.Count(body, folded))
	}
	body = bytes.Replace(body, folded, older, 1)
	if err := s.bulk(ctx, []bulkOp{{Index: alias, Action: "index", ID: stale.ID, Version: time.Now().UnixMilli(), Body: body, What: "stale"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.refresh(ctx, alias); err != nil {
		t.Fatal(err)
	}

	find := func(q string) []string {
		t.Helper()
		n, err := query.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Search(ctx, notice.SearchQuery{Filter: notice.Filter{Q: n}, Sort: notice.SortPublishedDesc, Limit: 10})
		if err != nil {
			t.Fatalf("q %q: %v", q, err)
		}
		var out []string
		for _, n := range p.Notices {
			out = append(out, n.Text)
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		q          string
		v2, latest []string
	}{
		// The standard analyzer drops ½: every W company.
		{"w½", []string{"W & CO PTY LTD", "W½ HOLDINGS PTY LTD"}, []string{"W½ HOLDINGS PTY LTD"}},
		// It splits ideographs: no indexed token starts with 日本.
		{"日本*", nil, []string{"日本語 notice"}},
		// The stale document holds U+03F3, which the standard analyzer
		// also finds for U+037F (it lower-cases); rebuilt, it holds U+037F.
		{"\u03f3", []string{"\u037f YOT"}, nil},
		{"\u037f", []string{"\u037f YOT"}, []string{"\u037f YOT"}},
	}
	for _, c := range cases {
		if got := find(c.q); !slices.Equal(got, c.v2) {
			t.Errorf("version 2: q %q finds %q, want %q", c.q, got, c.v2)
		}
	}
	h, err := s.Health(ctx)
	if err != nil || len(h.Indices) == 0 || h.Indices[0].Version != 2 {
		t.Fatalf("before the reindex: %+v (%v), want version 2", h.Indices, err)
	}

	res, err := s.Reindex(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Notices, fmt.Sprintf("-notices-v%d-", cur.Version)) || res.NoticesCopied != int64(len(texts)) {
		t.Fatalf("reindex: %+v", res)
	}
	if err := s.do(ctx, s.timeout, "HEAD", "/"+v2Index, nil, nil); !isNotFound(err) {
		t.Errorf("version 2 index %s: HEAD gave %v, want it deleted", v2Index, err)
	}
	for _, c := range cases {
		if got := find(c.q); !slices.Equal(got, c.latest) {
			t.Errorf("version %d: q %q finds %q, want %q", cur.Version, c.q, got, c.latest)
		}
	}
}

// noticesVersion2 is the notices index definition of mapping version 2:
// the current one with fts analysed by the standard analyzer.
func noticesVersion2(t *testing.T, cur mappings.Index) mappings.Index {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(cur.Body, &body); err != nil {
		t.Fatal(err)
	}
	m := body["mappings"].(map[string]any)
	m["_meta"] = map[string]any{"version": 2}
	m["properties"].(map[string]any)["fts"] = map[string]any{"type": "text", "analyzer": "standard", "position_increment_gap": 1000}
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return mappings.Index{Kind: mappings.Notices, Version: 2, Body: raw}
}
