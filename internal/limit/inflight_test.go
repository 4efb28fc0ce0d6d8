package limit

import (
	"context"
	"testing"
	"time"
)

// TestInflightWaitsOnlyForWorkBegunBefore: an Acquire waits for the
// releases under way when it starts, not for those begun after, which
// under steady load never all end together.
func TestInflightWaitsOnlyForWorkBegunBefore(t *testing.T) {
	var f inflight
	if err := f.begun().wait(context.Background()); err != nil {
		t.Fatalf("nothing under way: %v", err)
	}
	doneA := f.add()
	u := f.begun()
	doneB := f.add() // begun after: not waited for
	defer doneB()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := u.wait(ctx); err == nil {
		t.Fatal("wait returned while the work begun before it was under way")
	}
	doneA()
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := u.wait(ctx); err != nil {
		t.Fatalf("wait after the work begun before it ended, with later work under way: %v", err)
	}
	if n := len(f.begun()); n != 1 {
		t.Fatalf("%d pieces of work under way, want 1 (the later one)", n)
	}
}
