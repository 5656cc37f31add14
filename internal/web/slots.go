package web

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// slots are the expensive pages' places, shared fairly: no one client (a
// signed-in principal, else an address) holds more than its share, so
// that one visitor's loop of heavy pages, or of URLs made to be slow,
// cannot make everyone else's tree page answer 503. A request that finds
// no place waits briefly, first come first served among those who may
// take one, then gives up.
type slots struct {
	mu    sync.Mutex
	total int
	share int
	used  int
	by    map[string]int
	queue []*slotWaiter
}

type slotWaiter struct {
	key   string
	ready chan struct{} // closed once the place is given
}

// maxSlotWaiters bounds the queue: past it a request answers 503 at once
// rather than holding its connection.
const maxSlotWaiters = 256

// newSlots makes n places; one client may hold half of them (at least 1).
func newSlots(n int) *slots {
	return &slots{total: n, share: max(1, n/2), by: map[string]int{}}
}

// can says whether key may take a place now (s.mu held).
func (s *slots) can(key string) bool {
	return s.used < s.total && s.by[key] < s.share
}

func (s *slots) take(key string) {
	s.used++
	s.by[key]++
}

// acquire takes a place for key, waiting at most wait (and never past
// ctx); false when none came.
func (s *slots) acquire(ctx context.Context, key string, wait time.Duration) bool {
	s.mu.Lock()
	if s.can(key) {
		s.take(key)
		s.mu.Unlock()
		return true
	}
	if wait <= 0 || len(s.queue) >= maxSlotWaiters {
		s.mu.Unlock()
		return false
	}
	me := &slotWaiter{key: key, ready: make(chan struct{})}
	s.queue = append(s.queue, me)
	s.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-me.ready:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-me.ready: // given while the timer fired: keep it
		return true
	default:
	}
	for i, w := range s.queue {
		if w == me {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			break
		}
	}
	return false
}

// release gives key's place back, handing it to the first waiter that may
// take one.
func (s *slots) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
	if s.by[key]--; s.by[key] <= 0 {
		delete(s.by, key)
	}
	for i := 0; i < len(s.queue) && s.used < s.total; {
		w := s.queue[i]
		if !s.can(w.key) {
			i++
			continue
		}
		s.take(w.key)
		close(w.ready)
		s.queue = append(s.queue[:i], s.queue[i+1:]...)
	}
}

// inUse is how many places key holds (tests).
func (s *slots) inUse(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[key]
}

// clientKey names who a request counts against: its signed-in principal,
// else its peer's address (behind a proxy every anonymous visitor shares
// the proxy's address, and so one share).
func clientKey(r *http.Request) string {
	if p := principalOf(r); p != "" {
		return "principal " + p
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "address " + host
}

// waiting is how many requests wait for a place (tests).
func (s *slots) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}
