package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

// Budgets of a request, the defaults of Config's fields.
const (
	// DefaultDeadline is how long a page or API handler may work: its
	// context (and so git and SQLite under it) is cancelled then.
	DefaultDeadline = 15 * time.Second
	// DefaultExpensive is how many expensive pages (diffs, interdiffs,
	// blobs, trees, logs) run at once; one client (principal or address)
	// holds at most half of them.
	DefaultExpensive = 4
	// DefaultSlotWait is how long an expensive page waits for a slot
	// before it answers 503.
	DefaultSlotWait = time.Second
	// MaxURL bounds a request's URL (path and query, as sent): longer is
	// 414 before any routing. It leaves room for a path MaxDepth deep.
	MaxURL = 16 << 10
	// MaxDepth bounds the segments of a path in a repository: git's own
	// core.maxTreeDepth default, so no tree git accepts is deeper. A
	// request path may hold pathSlack more (the repository's name,
	// /-/tree/ and the ref); deeper is 404 before any routing.
	MaxDepth  = 4096
	pathSlack = 64
	// retryAfter is what a 503 of an overloaded page asks a client to wait.
	retryAfter = 2 * time.Second
)

// pastDeadline turns a failure after r's deadline passed into "try again
// later" (SQLite and git report a cancelled context in their own words);
// other errors pass unchanged.
func pastDeadline(r *http.Request, err error) error {
	if fault.KindOf(err) == fault.Unavailable {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		return fault.Later(err, retryAfter, "this page took too long to build; try again later")
	}
	return err
}

// withDeadline runs the request under the configured deadline, so that
// the work stops (git is killed, SQLite interrupted), not just the write.
func (s *Server) withDeadline(r *http.Request) (*http.Request, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Deadline)
	return r.WithContext(ctx), cancel
}

// costly runs f in one of the expensive pages' slots, counted against the
// caller (slots): a request that finds none free, or whose caller holds
// its share, waits at most SlotWait and then answers 503 with
// Retry-After, so a burst of diff views queues at the client, not in this
// process's memory.
func (s *Server) costly(f handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		key := clientKey(r)
		if !s.slots.acquire(r.Context(), key, s.cfg.SlotWait) {
			return fault.Later(nil, retryAfter, "the server is busy with other expensive pages; try again in a moment")
		}
		defer s.slots.release(key)
		return f(w, r)
	}
}

// overBudget answers a request whose URL is over MaxURL (414) or whose
// path is deeper than any tree can be (404) before any routing: both cost
// a scan of the URL, so a flood of them costs next to nothing.
func (s *Server) overBudget(w http.ResponseWriter, r *http.Request) bool {
	status, msg := 0, ""
	switch {
	case len(r.RequestURI) > MaxURL:
		status, msg = http.StatusRequestURITooLong, fmt.Sprintf("URL too long: %d bytes, at most %d", len(r.RequestURI), MaxURL)
	case strings.Count(r.URL.Path, "/") > MaxDepth+pathSlack:
		status, msg = http.StatusNotFound, fmt.Sprintf("path not found: deeper than %d levels", MaxDepth)
	default:
		return false
	}
	if isAPI(r) {
		writeJSON(w, status, map[string]any{"error": msg})
		return true
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
	return true
}

// within runs h under r's deadline, which covers all of the request's
// work: git and SQLite stop on the context, and Go code between them
// (routing, parsing, rendering) may not look at it, so a handler that has
// not begun its answer when the deadline passes is answered 503 at once
// and its later writes are dropped (its slot stays taken until it
// returns: it still costs). One that has begun is waited for: its git
// is being killed. (http.TimeoutHandler does the rest of this, but holds
// a whole answer in memory until its handler returns, and a raw blob may
// be 64 MiB.)
func (s *Server) within(w http.ResponseWriter, r *http.Request, h http.Handler) {
	g := &guarded{w: w, h: w.Header().Clone()}
	done := make(chan any, 1)
	go func() {
		defer func() {
			v := recover()
			if v != nil && v != http.ErrAbortHandler && g.isStopped() {
				s.cfg.Log.ErrorContext(r.Context(), "panic after the deadline", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
			}
			done <- v
		}()
		h.ServeHTTP(g, r)
	}()
	select {
	case v := <-done:
		if v != nil {
			panic(v) // ServeHTTP's recovery answers it
		}
		g.finish()
		return
	case <-r.Context().Done():
	}
	if !g.stop() {
		if v := <-done; v != nil {
			panic(v)
		}
		return
	}
	err := fault.Later(r.Context().Err(), retryAfter, "this page took too long to build; try again later")
	s.fail(w, r, err)
}

// guarded is a ResponseWriter that can be cut off: after stop, writes are
// dropped. Its header map is its own until the handler's WriteHeader, so
// a handler still running after ServeHTTP returned never touches
// net/http's.
type guarded struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	h       http.Header
	began   bool
	stopped bool
}

func (g *guarded) Header() http.Header { return g.h }

func (g *guarded) WriteHeader(code int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writeHeader(code)
}

func (g *guarded) writeHeader(code int) {
	if g.stopped || g.began {
		return
	}
	g.began = true
	dst := g.w.Header()
	clear(dst)
	for k, v := range g.h {
		dst[k] = v
	}
	g.w.WriteHeader(code)
}

func (g *guarded) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return 0, http.ErrHandlerTimeout
	}
	if !g.began {
		if g.h.Get("Content-Type") == "" {
			g.h.Set("Content-Type", http.DetectContentType(b))
		}
		g.writeHeader(http.StatusOK)
	}
	return g.w.Write(b)
}

// stop cuts the handler off unless it has begun its answer; it says
// whether it did.
func (g *guarded) stop() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.began {
		return false
	}
	g.stopped = true
	return true
}

// finish hands over the headers of a handler that returned without a
// body (its status is net/http's 200).
func (g *guarded) finish() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.began && !g.stopped {
		dst := g.w.Header()
		clear(dst)
		for k, v := range g.h {
			dst[k] = v
		}
	}
}

func (g *guarded) isStopped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stopped
}

// errTooLarge is what a page says about a request whose answer would be
// over its budget and that cannot be cut (e.g. a raw file).
func errTooLarge(what string, limit int64) error {
	return fault.New(fault.TooLarge, "%s is over the %s the web serves; use git", what, size(limit))
}
