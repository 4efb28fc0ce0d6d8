package webhook

import (
	"context"
	"sync"
)

// hostLimiter bounds the requests in flight per endpoint. Slots of an
// endpoint with nobody holding or waiting are forgotten, so the map stays as
// small as the set of busy endpoints.
type hostLimiter struct {
	per    int
	mu     sync.Mutex
	hosts  map[string]*hostSlots
	onWait func(host string) // test hook: called when an acquire must wait
}

// hostSlots is one endpoint's semaphore and how many hold or await it.
type hostSlots struct {
	sem   chan struct{}
	users int
}

func newHostLimiter(per int) *hostLimiter {
	return &hostLimiter{per: per, hosts: make(map[string]*hostSlots)}
}

// acquire takes a slot for host, waiting until one is free or ctx ends. The
// returned release must be called exactly once.
func (l *hostLimiter) acquire(ctx context.Context, host string) (release func(), err error) {
	l.mu.Lock()
	h := l.hosts[host]
	if h == nil {
		h = &hostSlots{sem: make(chan struct{}, l.per)}
		l.hosts[host] = h
	}
	h.users++
	onWait := l.onWait
	l.mu.Unlock()

	done := func() {
		l.mu.Lock()
		h.users--
		if h.users == 0 {
			delete(l.hosts, host)
		}
		l.mu.Unlock()
	}
	release = func() { <-h.sem; done() }

	select {
	case h.sem <- struct{}{}:
		return release, nil
	default:
	}
	if onWait != nil {
		onWait(host)
	}
	select {
	case h.sem <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}
