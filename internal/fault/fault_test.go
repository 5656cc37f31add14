package fault

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCodes(t *testing.T) {
	for _, tc := range []struct {
		err    error
		exit   int
		status int
		retry  int
	}{
		{nil, 0, 500, 0},
		{errors.New("boom"), 1, 500, 0},
		{New(Usage, "bad"), 2, 400, 0},
		{New(Conflict, "held"), 3, 409, 0},
		{New(NotFound, "no"), 4, 404, 0},
		{New(Denied, "no"), 5, 403, 0},
		{New(Unauthenticated, "who"), 5, 401, 0},
		{Later(errors.New("SQLITE_BUSY"), 2*time.Second, "database busy"), 6, 503, 2},
		{Later(nil, 0, "disk full"), 6, 503, int(DefaultRetryAfter / time.Second)},
		{Later(nil, 1500*time.Millisecond, "busy"), 6, 503, 2},
		{&Error{Kind: RateLimited, Msg: "rate limit", RetryAfter: 10 * time.Millisecond}, 6, 429, 1},
		{New(Unprocessable, "key sent again with other arguments"), 2, 422, 0},
		{fmt.Errorf("wrapped: %w", Later(nil, time.Second, "read-only")), 6, 503, 1},
	} {
		if tc.err == nil {
			if ExitCode(nil) != 0 {
				t.Errorf("ExitCode(nil) = %d", ExitCode(nil))
			}
			continue
		}
		if got := ExitCode(tc.err); got != tc.exit {
			t.Errorf("ExitCode(%v) = %d, want %d", tc.err, got, tc.exit)
		}
		if got := HTTPStatus(tc.err); got != tc.status {
			t.Errorf("HTTPStatus(%v) = %d, want %d", tc.err, got, tc.status)
		}
		if got := RetryAfterSeconds(tc.err); got != tc.retry {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tc.err, got, tc.retry)
		}
	}
}

// Default keeps a refusal's own message and wraps a plain error.
func TestDefault(t *testing.T) {
	busy := Later(nil, 0, "database busy")
	if got := Default(fmt.Errorf("open: %w", busy), "forge database unavailable"); Public(got) != "database busy" || ExitCode(got) != 6 {
		t.Errorf("Default(busy) = %v", got)
	}
	if got := Default(errors.New("ENOENT"), "forge database unavailable"); Public(got) != "forge database unavailable" || ExitCode(got) != 1 {
		t.Errorf("Default(plain) = %v", got)
	}
}

func TestSay(t *testing.T) {
	flag := func(f string) string { return "--" + f }
	tests := []struct {
		msg, bare, flags string
	}{
		{"plain", "plain", "plain"},
		{Field("line") + " needs " + Field("file"), "line needs file", "--line needs --file"},
		{"a comment needs a body (" + Field("body") + ")", "a comment needs a body (body)", "a comment needs a body (--body)"},
		{"unpaired \x1fmark", "unpaired \x1fmark", "unpaired \x1fmark"},
	}
	for _, tt := range tests {
		e := New(Usage, "%s", tt.msg)
		if got := e.Say(Bare); got != tt.bare {
			t.Errorf("Say(Bare) = %q, want %q", got, tt.bare)
		}
		if got := e.Say(flag); got != tt.flags {
			t.Errorf("Say(flag) = %q, want %q", got, tt.flags)
		}
		if got := Public(e); got != tt.bare {
			t.Errorf("Public = %q, want %q", got, tt.bare)
		}
	}
}

func TestOnField(t *testing.T) {
	base := New(NotFound, "repository x not found")
	err := OnField(fmt.Errorf("context: %w", base), "repo")
	if fe := As(err); fe.Field != "repo" || fe.Kind != NotFound || fe.Msg != base.Msg {
		t.Fatalf("OnField = %+v", fe)
	}
	if base.Field != "" {
		t.Fatal("OnField changed the original")
	}
	if got := As(OnField(NewField(Usage, "body", "x"), "repo")).Field; got != "body" {
		t.Fatalf("OnField replaced a field: %q", got)
	}
	plain := errors.New("boom")
	if OnField(plain, "repo") != plain {
		t.Fatal("OnField changed a plain error")
	}
}
