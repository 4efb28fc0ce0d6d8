package scheduler

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/redisstore"
	"github.com/noticesd/noticesd/internal/testservers"
	"github.com/noticesd/noticesd/internal/webhook"
)

// taskReads counts the Redis commands that name one asynq task key of a
// queue (asynq's GetTaskInfo reads the task's hash by that key).
type taskReads struct {
	prefix string
	n      atomic.Int64
}

func (h *taskReads) count(cmd redis.Cmder) {
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && strings.HasPrefix(s, h.prefix) {
			h.n.Add(1)
			return
		}
	}
}

func (h *taskReads) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *taskReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *taskReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}

// TestSweepLooksOnlyAtOverdueDeliveries: with many pending deliveries whose
// attempts are not due yet (retries minutes or hours away) and one long
// overdue without a task, the sweep reads asynq's task of the overdue one
// only (archived), and puts it back in the outbox: its cost follows the deliveries
// that are due, not every pending one. Real Redis; the scheduler's Redis
// client counts the commands that read an asynq task.
func TestSweepLooksOnlyAtOverdueDeliveries(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := h.watch(71, "whsec_sweep_cost")
	const later = 40
	now := time.Now()
	var pairs []redisstore.Ref
	var first notice.Notice
	for i := range later + 1 {
		n := h.ingest("SWEEP-"+string(rune('A'+i/26))+string(rune('a'+i%26)), 71, now.Add(-2*time.Hour))
		stored, err := h.notes.Notice(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, redisstore.Ref{WatchID: w.ID, NoticeSeq: stored.Seq})
		if i == 0 {
			first = n
		}
	}
	// The first is due an hour ago (its task lost), the rest in an hour.
	if k, err := h.rs.CreateDeliveries(ctx, pairs[:1], now.Add(-time.Hour)); err != nil || k != 1 {
		t.Fatalf("CreateDeliveries (overdue) = %d, %v", k, err)
	}
	if k, err := h.rs.CreateDeliveries(ctx, pairs[1:], now.Add(time.Hour)); err != nil || k != later {
		t.Fatalf("CreateDeliveries (later) = %d, %v", k, err)
	}
	rdb, err := redisstore.Dial(config.Config{RedisURL: testservers.Redis(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	reads := &taskReads{prefix: "asynq:{" + QueueName(h.ns) + "}:t:"}
	rdb.AddHook(reads)
	s, err := New(Config{Redis: rdb, Namespace: h.ns, Ledger: h.rs, Sender: h.sender(), RetryUnit: unit,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// The overdue one's task was archived (its runs spent in an outage).
	lost := redisstore.Ref{WatchID: w.ID, DeliveryID: webhook.DeliveryID(w.ID, first.ID), NoticeSeq: pairs[0].NoticeSeq}
	if ok, err := s.Enqueue(ctx, lost); err != nil || !ok {
		t.Fatalf("Enqueue = %v, %v", ok, err)
	}
	if err := s.inspector.ArchiveTask(s.queue, lost.DeliveryID); err != nil {
		t.Fatal(err)
	}
	reads.n.Store(0)
	n, err := s.SweepOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("SweepOnce = %d; want 1, the overdue delivery back in the outbox", n)
	}
	if got := reads.n.Load(); got != 1 {
		t.Errorf("the sweep read %d asynq tasks; want 1 (the overdue delivery's), none of the %d not due yet", got, later)
	}
}
