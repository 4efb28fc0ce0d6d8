package elastic

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/store/elastic/esdoc"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestCatchUpBlocksLateWrites: once a reindex's catch-up has copied the
// old notices index, nothing can land in it unseen. A write resolved to the
// old index before the swap and arriving after the copy (made here by
// writing to the old index by name) is refused by the catch-up's write
// block, for the writer to send again through the live alias; had it been
// accepted, it would have been dropped with the old index.
func TestCatchUpBlocksLateWrites(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	if _, err := s.UpsertNotices(ctx, synthBatch("A", 0, 200)); err != nil {
		t.Fatal(err)
	}
	storetest.LoadRegister(t, storetest.Backend{Register: s}, storetest.RegisterRows())
	var late []bulkFailure
	var lateErr error
	hooked := false
	catchUpCopiedHook = func(old []string) {
		hooked = true
		n := synthNotice("L", 1)
		version := time.Now().UnixMilli()
		late, lateErr = s.bulkOnce(ctx, []bulkOp{{Index: old[0], Action: "index", ID: n.ID, Version: version,
			Body: esdoc.AppendNotice(nil, &n, version), What: "a late notice"}})
	}
	defer func() { catchUpCopiedHook = nil }()
	if _, err := s.Reindex(ctx, nil); err != nil {
		t.Fatalf("reindex: %v", err)
	}
	if !hooked {
		t.Fatal("the catch-up did not run")
	}
	if lateErr != nil {
		t.Fatalf("the late write: %v", lateErr)
	}
	if len(late) != 1 || !writeBlocked(late[0]) {
		t.Errorf("a write to the old index after the catch-up's copy: refused %v, want refused by a write block (accepted, it is lost with the index)", late)
	}
}

// TestBulkResendsWriteBlocked: a write refused by a write block is sent
// again, and lands where its alias names by then; while the alias still
// names the blocked index it fails as refused (not as overloaded).
func TestBulkResendsWriteBlocked(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, nil)
	a, b, alias := s.cfg.Namespace+"-blocked-a", s.cfg.Namespace+"-blocked-b", s.cfg.Namespace+"-blocked"
	for _, ix := range []string{a, b} {
		if err := s.do(ctx, 10*time.Second, http.MethodPut, "/"+ix, []byte(`{"settings":{"number_of_replicas":0}}`), nil); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.do(context.Background(), 10*time.Second, http.MethodDelete, "/"+ix, nil, nil) })
	}
	moveAlias := func(from, to string) {
		body := obj{"actions": []obj{{"add": obj{"index": to, "alias": alias}}}}
		if from != "" {
			body["actions"] = append(body["actions"].([]obj), obj{"remove": obj{"index": from, "alias": alias}})
		}
		if err := s.do(ctx, 10*time.Second, http.MethodPost, "/_aliases", body, nil); err != nil {
			t.Fatal(err)
		}
	}
	moveAlias("", a)
	if err := s.do(ctx, 10*time.Second, http.MethodPut, "/"+a+"/_block/write", nil, nil); err != nil {
		t.Fatal(err)
	}
	op := func(id string) []bulkOp {
		return []bulkOp{{Index: alias, Action: "index", ID: id, Body: []byte(`{"n":1}`), What: "doc " + id}}
	}

	// The alias moves to b before the first retry.
	bulkRetryHook = func() { moveAlias(a, b); bulkRetryHook = nil }
	defer func() { bulkRetryHook = nil }()
	if err := s.bulk(ctx, op("moved")); err != nil {
		t.Fatalf("a write refused by the block, its alias moved: %v, want it written", err)
	}
	if err := s.do(ctx, 10*time.Second, http.MethodGet, "/"+b+"/_doc/moved", nil, nil); err != nil {
		t.Errorf("the resent write is not in %s: %v", b, err)
	}

	// The alias stays on a blocked index: refused, after the retries.
	moveAlias(b, a)
	err := s.bulk(ctx, op("stuck"))
	var r *refused
	if !errors.As(err, &r) || len(r.items) != 1 || !writeBlocked(r.items[0]) {
		t.Errorf("a write its alias keeps on a blocked index: %v, want it refused by the block", err)
	}
}
