package web

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

// Budgets of a request, the defaults of Config's fields.
const (
	// DefaultDeadline is how long a page or API handler may work: its
	// context (and so git and SQLite under it) is cancelled then.
	DefaultDeadline = 15 * time.Second
	// DefaultExpensive is how many expensive pages (diffs, interdiffs,
	// blobs, trees, logs) run at once; past it they answer 503.
	DefaultExpensive = 4
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

// costly runs f only when one of the expensive pages' slots is free, and
// answers 503 with Retry-After when none is: a burst of diff views queues
// at the client, not in this process's memory.
func (s *Server) costly(f handler) handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		select {
		case s.heavy <- struct{}{}:
		default:
			return fault.Later(nil, retryAfter, "the server is busy with other expensive pages; try again in a moment")
		}
		defer func() { <-s.heavy }()
		return f(w, r)
	}
}

// errTooLarge is what a page says about a request whose answer would be
// over its budget and that cannot be cut (e.g. a raw file).
func errTooLarge(what string, limit int64) error {
	return fault.New(fault.TooLarge, "%s is over the %s the web serves; use git", what, size(limit))
}
