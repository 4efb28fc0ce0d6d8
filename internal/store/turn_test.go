package store

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestTurnOrdersSteps: batches whose goroutines reach a step in any order
// take it in the order their turns were made, for each step on its own;
// Done waits for the batch before, so a batch that fails early (Finish
// before its turn) does not let the batch after it jump the queue.
func TestTurnOrdersSteps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fails map[int]bool // batches that Finish without taking their steps
	}{
		{"all take their steps", nil},
		{"the first fails early", map[int]bool{0: true}},
		{"a middle one fails early", map[int]bool{3: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 8
			var turns []*Turn
			var last *Turn
			for range n {
				last = NextTurn(last)
				turns = append(turns, last)
			}
			var mu sync.Mutex
			order := map[Step][]int{}
			var wg sync.WaitGroup
			for i := n - 1; i >= 0; i-- { // started last first
				wg.Add(1)
				go func() {
					defer wg.Done()
					tr := turns[i]
					defer tr.Finish()
					if tc.fails[i] {
						return
					}
					for _, s := range []Step{StepAllocate, StepRecord} {
						if err := tr.Wait(context.Background(), s); err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						order[s] = append(order[s], i)
						mu.Unlock()
						tr.Done(s)
					}
				}()
			}
			wg.Wait()
			for _, s := range []Step{StepAllocate, StepRecord} {
				want := -1
				for _, got := range order[s] {
					if got <= want {
						t.Errorf("step %d taken in the order %v", s, order[s])
						break
					}
					want = got
				}
				if len(order[s]) != n-len(tc.fails) {
					t.Errorf("step %d taken by %v", s, order[s])
				}
			}
		})
	}
}

// TestTurnWaitEndsWithItsContext: a batch waiting for a stuck batch before
// it gives up when its context ends; a nil turn never waits.
func TestTurnWaitEndsWithItsContext(t *testing.T) {
	first := NextTurn(nil)
	second := NextTurn(first)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := second.Wait(ctx, StepAllocate); err == nil {
		t.Error("Wait returned while the batch before had not ended its step")
	}
	var none *Turn
	if err := none.Wait(context.Background(), StepRecord); err != nil {
		t.Errorf("nil turn: %v", err)
	}
	none.Done(StepRecord)
	none.Finish()
	first.Finish()
	if err := second.Wait(context.Background(), StepAllocate); err != nil {
		t.Errorf("after the batch before finished: %v", err)
	}
}
