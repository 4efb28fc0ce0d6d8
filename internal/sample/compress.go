package sample

import (
	"compress/gzip"
	"io"
	"sync"
)

// asyncWriter compresses on a second goroutine, so generating and gzipping
// the notices use both cores. Writes are copied; the first compression or
// write error is returned by later Writes and by Close.
type asyncWriter struct {
	ch   chan []byte
	free chan []byte
	done chan error

	mu  sync.Mutex
	err error
}

func newAsyncWriter(gz *gzip.Writer, dst io.Writer) *asyncWriter {
	gz.Reset(dst)
	a := &asyncWriter{ch: make(chan []byte, 4), free: make(chan []byte, 8), done: make(chan error, 1)}
	go func() {
		var err error
		for b := range a.ch {
			if err == nil {
				if _, err = gz.Write(b); err != nil {
					a.mu.Lock()
					a.err = err
					a.mu.Unlock()
				}
			}
			select {
			case a.free <- b[:0]:
			default:
			}
		}
		if err == nil {
			err = gz.Close()
		}
		a.done <- err
	}()
	return a
}

// Write queues a copy of p for compression.
func (a *asyncWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	err := a.err
	a.mu.Unlock()
	if err != nil {
		return 0, err
	}
	var b []byte
	select {
	case b = <-a.free:
	default:
		b = make([]byte, 0, max(len(p), 1<<20))
	}
	a.ch <- append(b, p...)
	return len(p), nil
}

// Close waits for the queued writes and closes the gzip stream.
func (a *asyncWriter) Close() error {
	close(a.ch)
	return <-a.done
}
