package ingest

import "context"

// pipe overlaps reading with writing: produce runs on its own goroutine and
// hands batches through a short queue to consume, which runs on the
// calling goroutine. The first error of either stops both; a consume error
// wins, since a reader stopped by cancellation only reports that.
func pipe[T any](ctx context.Context, produce func(context.Context, chan<- []T) error, consume func([]T) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan []T, 2)
	produced := make(chan error, 1)
	go func() {
		defer close(queue)
		produced <- produce(ctx, queue)
	}()
	var consumeErr error
	for batch := range queue {
		if consumeErr != nil {
			continue // drain so the producer can finish
		}
		if err := ctx.Err(); err != nil {
			consumeErr = err
			cancel()
			continue
		}
		if err := consume(batch); err != nil {
			consumeErr = err
			cancel()
		}
	}
	if err := <-produced; consumeErr == nil {
		return err
	}
	return consumeErr
}
