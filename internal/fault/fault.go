// Package fault carries collab's refusals across package boundaries.
//
// An error has two channels, as in Gitea's hook path: a short message that is
// safe to show the person at the other end (the pusher, the SSH client, the
// HTTP caller), and the wrapped detail that goes only to the log. The Kind
// fixes the exit code of the SSH verbs and the HTTP status of the API.
package fault

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind classifies a refusal.
type Kind int

const (
	// Internal is a failure of the forge itself (exit 1, HTTP 500).
	Internal Kind = iota
	// Usage is bad usage or malformed input (exit 2, HTTP 400).
	Usage
	// Conflict is a lease held by another, not the holder, a stale token (exit 3, HTTP 409).
	Conflict
	// NotFound covers a missing repository, issue or patch, and a repository
	// the caller may not read (exit 4, HTTP 404).
	NotFound
	// Denied is a caller who may read but not do this (exit 5, HTTP 403).
	Denied
	// TooLarge is an oversized body (exit 2, HTTP 413).
	TooLarge
	// Unsupported is a body of the wrong media type (exit 2, HTTP 415).
	Unsupported
	// Unauthenticated is a missing or bad credential (exit 5, HTTP 401).
	Unauthenticated
	// Unavailable is "try again later": the database stayed busy past its
	// deadline, the disk is full, the root is read-only for a write (exit 6,
	// HTTP 503 with Retry-After). Nothing was written.
	Unavailable
	// RateLimited is a principal's write rate spent (exit 6, HTTP 429 with
	// Retry-After).
	RateLimited
	// Unprocessable is well-formed input that contradicts what the forge
	// already holds, such as an idempotency key sent again with other
	// arguments (exit 2, HTTP 422).
	Unprocessable
)

// Error is a refusal with a public message and an optional private cause.
type Error struct {
	Kind Kind
	// Msg is safe for the client: one line, no paths or SQL.
	Msg string
	// Err is the detail for the log; it may be nil.
	Err error
	// Fields carry extra JSON fields of a refusal (holder, expires_at, candidates).
	Fields map[string]any
	// RetryAfter is when an Unavailable or RateLimited caller may try
	// again (HTTP Retry-After); zero means DefaultRetryAfter.
	RetryAfter time.Duration
	// Field names the input the refusal is about ("body", "repo",
	// "lease-token"), "" when none. Msg refers to input fields only through
	// Field(name) marks, which each transport words its own way (Say).
	Field string
}

// DefaultRetryAfter is the Retry-After of a "try again later" refusal that
// names none.
const DefaultRetryAfter = 5 * time.Second

// Later returns a "try again later" refusal of kind Unavailable whose
// public message is msg, with the detail err for the log.
func Later(err error, retry time.Duration, msg string) *Error {
	return &Error{Kind: Unavailable, Msg: msg, Err: err, RetryAfter: retry}
}

// RetryAfterSeconds is the Retry-After header value of err: whole seconds,
// at least 1; 0 when err is not a "try again later" refusal.
func RetryAfterSeconds(err error) int {
	fe := As(err)
	if fe.Kind != Unavailable && fe.Kind != RateLimited {
		return 0
	}
	d := fe.RetryAfter
	if d <= 0 {
		d = DefaultRetryAfter
	}
	return int((d + time.Second - 1) / time.Second)
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Say(Bare) + ": " + e.Err.Error()
	}
	return e.Say(Bare)
}

// fieldMark brackets a field's name inside a message. A control
// character, so that no client value quoted through text.Clip can forge
// one.
const fieldMark = "\x1f"

// Field refers to input field name inside a refusal's message, to be
// worded by the transport that shows it: "--body" on the SSH verbs,
// `"body"` in the HTTP API.
func Field(name string) string { return fieldMark + name + fieldMark }

// Bare words a field by its plain name, for logs and for callers that take
// no fields (the hooks, the admin commands).
func Bare(field string) string { return field }

// Say returns the public message with each Field reference worded by word.
func (e *Error) Say(word func(field string) string) string {
	if !strings.Contains(e.Msg, fieldMark) {
		return e.Msg
	}
	parts := strings.Split(e.Msg, fieldMark)
	var b strings.Builder
	for i, p := range parts {
		// Odd parts are field names (an unpaired mark is left as text).
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString(word(p))
		case i%2 == 1:
			b.WriteString(fieldMark + p)
		default:
			b.WriteString(p)
		}
	}
	return b.String()
}

// NewField returns a refusal of kind k about input field; format may name
// fields through Field.
func NewField(k Kind, field, format string, args ...any) *Error {
	e := New(k, format, args...)
	e.Field = field
	return e
}

// OnField returns err with its refusal marked as being about input field,
// unless it names a field already; an error that is no refusal is returned
// as it is.
func OnField(err error, field string) error {
	var fe *Error
	if !errors.As(err, &fe) || fe.Field != "" {
		return err
	}
	c := *fe
	c.Field = field
	return &c
}

func (e *Error) Unwrap() error { return e.Err }

// New returns a refusal of kind k with a public message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns an internal failure whose public message is msg and whose
// detail is err.
func Wrap(err error, msg string) *Error {
	return &Error{Kind: Internal, Msg: msg, Err: err}
}

// Default is err itself when it already carries a refusal (a busy database,
// a schema too new, …), whose message says more than msg would; otherwise
// it is Wrap(err, msg).
func Default(err error, msg string) error {
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	return Wrap(err, msg)
}

// With adds an extra JSON field to the refusal and returns it.
func (e *Error) With(key string, value any) *Error {
	if e.Fields == nil {
		e.Fields = map[string]any{}
	}
	e.Fields[key] = value
	return e
}

// As finds the *Error in err's chain; a plain error becomes an internal one
// whose public message hides the detail.
func As(err error) *Error {
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return &Error{Kind: Internal, Msg: "internal error", Err: err}
}

// KindOf reports the Kind of err (Internal for a plain error).
func KindOf(err error) Kind { return As(err).Kind }

// Public returns the message of err that is safe to show a client, with
// its fields worded Bare.
func Public(err error) string { return As(err).Say(Bare) }

// ExitCode maps err to the exit code of the contract.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	switch KindOf(err) {
	case Usage, TooLarge, Unsupported, Unprocessable:
		return 2
	case Conflict:
		return 3
	case NotFound:
		return 4
	case Denied, Unauthenticated:
		return 5
	case Unavailable, RateLimited:
		return 6
	default:
		return 1
	}
}

// HTTPStatus maps err to the status of the JSON API. The numbers are
// spelled out so that collab-hook does not link net/http.
func HTTPStatus(err error) int {
	switch KindOf(err) {
	case Usage:
		return 400
	case Conflict:
		return 409
	case NotFound:
		return 404
	case Denied:
		return 403
	case Unauthenticated:
		return 401
	case TooLarge:
		return 413
	case Unsupported:
		return 415
	case Unavailable:
		return 503
	case RateLimited:
		return 429
	case Unprocessable:
		return 422
	default:
		return 500
	}
}
