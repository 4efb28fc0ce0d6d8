package redisstore

import (
	"context"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/publog"
	"github.com/noticesd/noticesd/internal/store/sqlite"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// heldWrite is the SQLite notice store with its first write held, once
// stored, until release is closed: a writer stopped between storing a
// notice (its seq handed out) and publishing it.
type heldWrite struct {
	*sqlite.Store
	stored, release chan struct{}
}

func (h *heldWrite) UpsertNotices(ctx context.Context, batch []notice.Notice) (store.UpsertResult, error) {
	r, err := h.Store.UpsertNotices(ctx, batch)
	close(h.stored)
	<-h.release
	return r, err
}

// TestIngestPublishesInSeqOrder: a notice store that does not publish
// (SQLite) hands seqs out as it stores; a second writer must not publish
// its later seq while the first writer's stored notice is unpublished,
// or Published and the match log's through pass a seq arrival matching
// has not seen, and a poller following next_since steps over it (the
// one-match gap TestGaplessMatches saw under CPU load). Writer B either
// finishes first (the race) or waits for the writer lease A holds.
func TestIngestPublishesInSeqOrder(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{NoMatchOnRead: true})
	waiting := make(chan struct{}, 1)
	other := f.sameNamespace(t, Options{NoMatchOnRead: true, Log: publog.New(redisClient(t), f.ns, publog.Options{
		Who: "B", Waiting: func(string) {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}})})
	tmpl := storetest.Notices(t)[0]
	held := &heldWrite{Store: f.notices, stored: make(chan struct{}), release: make(chan struct{})}
	a := Ingest{Notices: storetest.Publishing{Unpublished: held, Log: f.rs.log}, Redis: f.rs}
	b := Ingest{Notices: storetest.Publishing{Unpublished: f.notices, Log: other.log}, Redis: other}

	aDone := make(chan error, 1)
	go func() {
		_, err := a.UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, "A", 3)})
		aDone <- err
	}()
	<-held.stored
	bDone := make(chan error, 1)
	go func() {
		_, err := b.UpsertNotices(ctx, []notice.Notice{genNotice(t, tmpl, "B", 6)})
		bDone <- err
	}()
	select {
	case err := <-bDone: // B did not wait for A
		bDone <- err
	case <-waiting:
	}
	close(held.release)
	for _, done := range []chan error{aDone, bDone} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}

	es, _, err := f.rs.log.Read(ctx, "0", 10)
	if err != nil {
		t.Fatal(err)
	}
	ns, _, _, err := summariesOf(es)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, n := range ns {
		seqs = append(seqs, n.Seq)
	}
	if len(seqs) != 2 || seqs[0] >= seqs[1] {
		t.Errorf("the publish log holds seqs %v in this order, want two ascending (A's stored first, so published first)", seqs)
	}
}
