package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
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
	// retryAfter is what a 503 asks a client to wait, in seconds.
	retryAfter = 2
)

// unavailable is a refusal that says "try again later": 503 with
// Retry-After (an overloaded server, a request past its deadline).
type unavailable struct {
	msg string
	err error
}

func (u *unavailable) Error() string {
	if u.err != nil {
		return u.msg + ": " + u.err.Error()
	}
	return u.msg
}

func (u *unavailable) Unwrap() error { return u.err }

// asUnavailable reports whether err, for request r, is to be answered 503:
// an unavailable refusal, or any failure once r's deadline has passed
// (SQLite and git report a cancelled context in their own words).
func asUnavailable(r *http.Request, err error) (*unavailable, bool) {
	var u *unavailable
	if errors.As(err, &u) {
		return u, true
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		return &unavailable{msg: "this page took too long to build; try again later", err: err}, true
	}
	return nil, false
}

// failUnavailable answers a 503 with Retry-After, JSON on the API.
func (s *Server) failUnavailable(w http.ResponseWriter, r *http.Request, u *unavailable) {
	s.cfg.Log.WarnContext(r.Context(), "request refused: try again later", "method", r.Method, "path", r.URL.EscapedPath(), "error", u.Error())
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	if isAPI(r) || r.URL.Path == "/healthz" {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": u.msg})
		return
	}
	s.render(w, r, http.StatusServiceUnavailable, "error", map[string]any{
		"Title": http.StatusText(http.StatusServiceUnavailable), "Status": http.StatusServiceUnavailable, "Message": u.msg})
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
			return &unavailable{msg: "the server is busy with other expensive pages; try again in a moment"}
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
