package scale

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/watch"
)

func TestMain(m *testing.M) { testservers.Main(m) }

func openTest(t *testing.T) *Store { return openTB(t) }

// openTB opens a scale store on the test servers in a fresh namespace.
func openTB(t testing.TB) *Store {
	t.Helper()
	st, err := Open(context.Background(), testConfig(t), redisstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testConfig is the scale configuration of the test servers, on a fresh
// namespace.
func testConfig(t testing.TB) config.Config {
	cfg := config.Default()
	cfg.Backend, cfg.ElasticsearchURL, cfg.RedisURL, cfg.Namespace = "scale",
		testservers.Elasticsearch(t), testservers.Redis(t), testservers.Namespace(t)
	return cfg
}

// both loads the same register rows and notices into w.
func load(t *testing.T, rw store.RegisterWriter, nw store.NoticeWriter, rows []notice.RegisterRow, ns []notice.Notice) (store.UpsertResult, error) {
	t.Helper()
	ctx := context.Background()
	l, err := rw.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return nw.UpsertNotices(ctx, ns)
}

func mk(source, acn, abn, state, code string) notice.Notice {
	n := notice.Notice{SourceID: source, ID: notice.IDFor(source), PublishedAt: "2026-11-20T01:00:00Z", PublishedDate: "2026-11-20",
		CompanyName: "CO " + source, NoticePurpose: "Appointment", NoticeCode: code, State: state, Status: "Published"}
	if acn != "" {
		n.ACN = &acn
	}
	if abn != "" {
		n.ABN = &abn
	}
	return n
}

func acn(n int) string {
	first8 := fmt.Sprintf("7%07d", n)
	return first8 + fmt.Sprint(ident.ACNCheckDigit(first8))
}

// TestWriterAndCompanyViews: the scale write path stores notices in
// Elasticsearch and records them in Redis without reading them back, also
// when Elasticsearch refuses one of the batch; the screen sees exactly the
// written ones. Company views (by ACN, and by an ABN the register gives to
// two ACNs) and the screen answer as the embedded store on the same data.
func TestWriterAndCompanyViews(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	sq, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "n.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	shared := "51" + acn(1)
	rows := []notice.RegisterRow{
		{CompanyName: "TWO PTY LTD", ACN: acn(2), ABN: shared, CurrentNameIndicator: "Y"},
		{CompanyName: "ONE OLD NAME", ACN: acn(1), ABN: shared, CurrentName: "ONE PTY LTD"},
		{CompanyName: "ONE PTY LTD", ACN: acn(1), ABN: shared, CurrentNameIndicator: "Y"},
		{CompanyName: "THREE PTY LTD", ACN: acn(3), ABN: "51" + acn(3), CurrentNameIndicator: "Y"},
	}
	ns := []notice.Notice{
		mk("W1", acn(1), "", "VIC", "A"),
		mk("W2", acn(2), shared, "NSW", "A"),
		mk("W3", "", shared, "QLD", "A"),
		mk("REFUSED", acn(3), "", "VIC", strings.Repeat("X", 40000)), // longer than a keyword term
		mk("W4", acn(3), "51"+acn(3), "VIC", "B"),
	}
	res, err := load(t, st.Writer(), st.Writer(), rows, ns)
	var be *store.BatchError
	if !errors.As(err, &be) || len(be.Items) != 1 || be.Items[0].Index != 3 || res.Inserted != 4 {
		t.Fatalf("scale upsert = %+v, %v; want 4 inserted and notice 3 refused", res, err)
	}
	ns = append(ns[:3], ns[4])
	if _, err := load(t, sq, sq, rows, ns); err != nil {
		t.Fatal(err)
	}
	ids := []ident.ID{{Value: acn(1), Kind: ident.ACN}, {Value: acn(2), Kind: ident.ACN}, {Value: shared, Kind: ident.ABN},
		{Value: acn(3), Kind: ident.ACN}, {Value: "51" + acn(3), Kind: ident.ABN}}
	got, err := st.Redis.Screen(ctx, ids, notice.Filter{IncludeDeregistration: true})
	if err != nil {
		t.Fatal(err)
	}
	want, err := sq.Screen(ctx, ids, notice.Filter{IncludeDeregistration: true})
	if err != nil {
		t.Fatal(err)
	}
	// The refused notice used up a notice_seq in scale mode (seqs are
	// cursors, gaps allowed), so seqs are compared apart from the rest.
	for _, r := range []*watch.ScreenResult{&got, &want} {
		for i := range r.Matched {
			r.Matched[i].LatestNotice.Seq = 0
			if li := r.Matched[i].LatestInsolvencyNotice; li != nil {
				li.Seq = 0
			}
		}
	}
	if !reflect.DeepEqual(got, want) || got.Counts.Matched != 5 {
		t.Errorf("screen: scale %+v\nembedded %+v", got, want)
	}
	for _, id := range ids {
		ec, err := st.Elastic.Company(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sc, err := sq.Company(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(companyKey(ec), companyKey(sc)) {
			t.Errorf("company %s: scale %v\nembedded %v", id.Value, companyKey(ec), companyKey(sc))
		}
	}
}

// companyKey is a company view with its notices' ids (not their seqs or
// collected_at, which the loading process sets).
func companyKey(c notice.Company) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s %d reg=%+v;", deref(c.ACN), deref(c.ABN), deref(c.Name), c.NoticeCount, c.Register)
	for _, n := range c.Notices {
		fmt.Fprintf(&b, " %s", n.ID)
	}
	return b.String()
}

func deref(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

// TestOpenWithRedisDown: with Redis not answering, Open fails at once as
// backend_unavailable naming Redis and its URL (password masked) and what
// to do, not with the first later step that needed Redis.
func TestOpenWithRedisDown(t *testing.T) {
	cfg := config.Default()
	cfg.Backend, cfg.ElasticsearchURL, cfg.Namespace = "scale", testservers.Elasticsearch(t), testservers.Namespace(t)
	cfg.RedisURL = "redis://:hunter2@127.0.0.1:1/0" // nothing listens on port 1
	_, err := Open(context.Background(), cfg, redisstore.Options{})
	if !errs.Is(err, errs.BackendUnavailable) {
		t.Fatalf("Open with Redis down: %v; want backend_unavailable", err)
	}
	for _, want := range []string{"open Redis at redis://:xxxxx@127.0.0.1:1/0", "NOTICES_REDIS_URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open with Redis down: %q; want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error shows the Redis password: %q", err)
	}
}
