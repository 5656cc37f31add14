package ops

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/ratelimit"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/store"
)

// world is a forge with a private repository demo.git: alice and bob
// write, carol reads, root is its admin, mallory has no grant.
type world struct {
	t   *testing.T
	ctx context.Context
	s   *Service
	now time.Time
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx, root, db := forgetest.New(t)
	w := &world{t: t, ctx: ctx, now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	w.s = &Service{DB: db, Root: root, Now: func() time.Time { return w.now }}
	err := db.Write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			"INSERT INTO repos(name, created_at) VALUES ('demo.git', 'x')",
			"INSERT INTO principals(name, created_at) VALUES ('alice','x'), ('bob','x'), ('carol','x'), ('root','x'), ('mallory','x')",
			"INSERT INTO grants(principal, repo, level) VALUES ('alice','demo.git','write'), ('bob','demo.git','write'), ('carol','demo.git','read'), ('root','demo.git','admin')",
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func as(name string) Actor { return Actor{Principal: name} }

func (w *world) issue(who, title string) issues.Issue {
	w.t.Helper()
	is, err := w.s.FileIssue(w.ctx, as(who), FileIssue{Repo: "demo", Title: title})
	if err != nil {
		w.t.Fatal(err)
	}
	return is
}

func flag(f string) string { return "--" + f }
func jsonField(f string) string {
	if f == FieldLeaseToken {
		return "X-Lease-Token:"
	}
	return `"` + f + `"`
}

// TestRefusalsNameTheirField: each refusal about input names the field,
// and each transport's wording of it reads as that transport takes it.
func TestRefusalsNameTheirField(t *testing.T) {
	w := newWorld(t)
	is := w.issue("alice", "one")
	ref := Ref{Repo: "demo", ID: is.ID}
	tests := []struct {
		name     string
		call     func() error
		kind     fault.Kind
		field    string
		flagSays string // what the SSH verbs print ("" to skip)
		jsonSays string // what the API prints ("" to skip)
	}{
		{"malformed repository", func() error {
			_, err := w.s.FileIssue(w.ctx, as("alice"), FileIssue{Repo: "../x", Title: "t"})
			return err
		}, fault.Usage, FieldRepo, "", ""},
		{"unreadable repository", func() error {
			_, err := w.s.ShowIssue(w.ctx, as("mallory"), ShowIssue{Issue: ref, Limit: 10})
			return err
		}, fault.NotFound, FieldRepo, "repository demo not found", ""},
		{"escape in a title", func() error {
			_, err := w.s.FileIssue(w.ctx, as("mallory"), FileIssue{Repo: "demo", Title: "\x1b]0;pwned\x07"})
			return err
		}, fault.Usage, FieldTitle, "title holds the control character \\x1b at byte 0", ""},
		{"C1 in a new title", func() error {
			t := "clear \u009b2J"
			_, _, err := w.s.EditIssue(w.ctx, as("alice"), EditIssue{Issue: ref, Title: &t})
			return err
		}, fault.Usage, FieldTitle, "title holds the control character \\u009b at byte 6", ""},
		{"comment page of none", func() error {
			_, err := w.s.ShowIssue(w.ctx, as("alice"), ShowIssue{Issue: ref})
			return err
		}, fault.Usage, FieldLimit, "bad limit 0: want 1 to 1000", ""},
		{"lease by a reader", func() error {
			_, err := w.s.AcquireLease(w.ctx, as("carol"), Acquire{Issue: ref})
			return err
		}, fault.Denied, FieldRepo, "write access to demo needed", ""},
		{"override by a writer", func() error {
			_, err := w.s.AcquireLease(w.ctx, as("alice"), Acquire{Issue: ref, Force: true})
			return err
		}, fault.Denied, FieldForce, "only a repository admin may override a lease (--force)", `("force")`},
		{"release override by a writer", func() error {
			_, err := w.s.ReleaseLease(w.ctx, as("bob"), Release{Issue: ref, Force: true})
			return err
		}, fault.Denied, FieldForce, "(--force)", `("force")`},
		{"bad page size", func() error {
			_, err := w.s.ListIssues(w.ctx, as("alice"), ListIssues{Repo: "demo", Limit: 0})
			return err
		}, fault.Usage, FieldLimit, "bad limit 0", ""},
		{"comment without body", func() error {
			_, err := w.s.Review(w.ctx, as("bob"), Review{Patch: Ref{Repo: "demo", ID: "abcd"}, Verdict: review.Comment})
			return err
		}, fault.Usage, FieldBody, "a comment needs a body (--body)", `a comment needs a body ("body")`},
		{"line without file", func() error {
			_, err := w.s.Review(w.ctx, as("bob"), Review{Patch: Ref{Repo: "demo", ID: "abcd"}, Verdict: review.Comment, Body: "x", Line: 2})
			return err
		}, fault.Usage, FieldLine, "--line needs --file", `"line" needs "file"`},
		{"bad review token", func() error {
			_, err := w.s.Review(w.ctx, as("bob"), Review{Patch: Ref{Repo: "demo", ID: "abcd"}, Verdict: review.Approve, LeaseToken: "x"})
			return err
		}, fault.Usage, FieldLeaseToken, "bad lease token", ""},
		{"negative revision", func() error {
			_, err := w.s.PatchDiff(w.ctx, as("bob"), PatchDiff{Patch: Ref{Repo: "demo", ID: "abcd"}, Revision: -1})
			return err
		}, fault.Usage, FieldRevision, "revisions are numbered from 1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe := fault.As(tt.call())
			if fe.Kind != tt.kind || fe.Field != tt.field {
				t.Fatalf("got kind %d field %q (%s), want kind %d field %q", fe.Kind, fe.Field, fe.Msg, tt.kind, tt.field)
			}
			if got := fe.Say(flag); tt.flagSays != "" && !strings.Contains(got, tt.flagSays) {
				t.Errorf("over SSH: %q, want it to hold %q", got, tt.flagSays)
			}
			if got := fe.Say(jsonField); tt.jsonSays != "" && !strings.Contains(got, tt.jsonSays) {
				t.Errorf("over HTTP: %q, want it to hold %q", got, tt.jsonSays)
			}
		})
	}
}

// TestAcquireLease: both transports resolve open issues only, and a live
// lease of another is refused without waiting for the writer lock.
func TestAcquireLease(t *testing.T) {
	w := newWorld(t)
	open := w.issue("alice", "open one")
	closed := w.issue("alice", "closed one")
	st := issues.Closed
	if _, _, err := w.s.EditIssue(w.ctx, as("alice"), EditIssue{Issue: Ref{Repo: "demo", ID: closed.ID}, State: &st}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.AcquireLease(w.ctx, as("bob"), Acquire{Issue: Ref{Repo: "demo", ID: closed.ID[:8]}}); fault.KindOf(err) != fault.NotFound ||
		!strings.Contains(fault.Public(err), "no open issue") {
		t.Fatalf("acquire on a closed issue: %v", err)
	}
	ref := Ref{Repo: "demo", ID: open.ID[:8]}
	l, err := w.s.AcquireLease(w.ctx, as("alice"), Acquire{Issue: ref, TTL: time.Minute})
	if err != nil || l.Holder != "alice" || l.Token != 1 {
		t.Fatalf("acquire: %+v %v", l, err)
	}

	// Hold the writer lock: bob's refusal must come from the plain read.
	held, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- w.s.DB.Write(w.ctx, func(*sql.Tx) error { close(held); <-release; return nil })
	}()
	<-held
	ctx, cancel := context.WithTimeout(w.ctx, time.Minute)
	defer cancel()
	_, err = w.s.AcquireLease(ctx, as("bob"), Acquire{Issue: ref, TTL: time.Minute})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fe := fault.As(err); fe.Kind != fault.Conflict || fe.Fields["holder"] != "alice" {
		t.Fatalf("acquire of a held lease while the writer lock is taken: %v", err)
	}
}

// TestFencedComment: a lease token fences a comment; without one, anyone
// who reads may comment on a leased issue.
func TestFencedComment(t *testing.T) {
	w := newWorld(t)
	is := w.issue("alice", "work")
	ref := Ref{Repo: "demo", ID: is.ID}
	if _, err := w.s.AcquireLease(w.ctx, as("alice"), Acquire{Issue: ref}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		who   string
		token int64
		kind  fault.Kind
	}{
		{"carol", 0, fault.Internal}, // no token: no fence
		{"alice", 1, fault.Internal},
		{"alice", 2, fault.Conflict},
		{"bob", 1, fault.Conflict}, // another principal's write with the holder's token
	}
	for _, tt := range tests {
		_, err := w.s.Comment(w.ctx, as(tt.who), Comment{Issue: ref, Body: "hi", LeaseToken: tt.token})
		if tt.kind == fault.Internal && err != nil || tt.kind != fault.Internal && fault.KindOf(err) != tt.kind {
			t.Errorf("%s with token %d: %v", tt.who, tt.token, err)
		}
	}
	cs, _, err := w.s.Comments(w.ctx, as("carol"), Comments{Issue: ref, Limit: 50, MaxBytes: 1 << 20})
	if err != nil || len(cs) != 2 {
		t.Fatalf("comments: %d %v", len(cs), err)
	}
	// The admin's override fences the old holder off.
	if _, err := w.s.AcquireLease(w.ctx, as("root"), Acquire{Issue: ref, Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.Comment(w.ctx, as("alice"), Comment{Issue: ref, Body: "late", LeaseToken: 1}); fault.KindOf(err) != fault.Conflict {
		t.Fatalf("old holder's token after the override: %v", err)
	}
}

// TestNotes: the ids an action resolves reach the caller's journal entry,
// also when the action then refuses.
func TestNotes(t *testing.T) {
	w := newWorld(t)
	is := w.issue("alice", "work")
	var got []any
	w.s.Note = func(k string, v any) { got = append(got, k, v) }
	_, err := w.s.Comment(w.ctx, as("bob"), Comment{Issue: Ref{Repo: "demo", ID: is.ID[:6]}, Body: "x", LeaseToken: 9})
	if fault.KindOf(err) != fault.Conflict || len(got) != 2 || got[0] != "ISSUE" || got[1] != is.ID {
		t.Fatalf("notes %v after %v", got, err)
	}
}

// TestRateLimit: every use case's write spends from its principal's
// bucket in the write's own transaction (a refused write leaves nothing),
// per principal, refilled by the Service's clock; the operator and
// anonymous visitors are never counted.
func TestRateLimit(t *testing.T) {
	w := newWorld(t)
	err := w.s.DB.Write(w.ctx, func(tx *sql.Tx) error {
		if err := store.SetSetting(w.ctx, tx, ratelimit.SettingBurst, "2"); err != nil {
			return err
		}
		return store.SetSetting(w.ctx, tx, ratelimit.SettingRefill, "0.5")
	})
	if err != nil {
		t.Fatal(err)
	}
	is := w.issue("alice", "one")
	ref := Ref{Repo: "demo", ID: is.ID}
	if _, err := w.s.Comment(w.ctx, as("alice"), Comment{Issue: ref, Body: "two"}); err != nil {
		t.Fatal(err)
	}
	_, err = w.s.FileIssue(w.ctx, as("alice"), FileIssue{Repo: "demo", Title: "three"})
	fe := fault.As(err)
	if fe.Kind != fault.RateLimited || fault.ExitCode(err) != 6 || fault.RetryAfterSeconds(err) != 2 ||
		!strings.Contains(fe.Msg, "rate limit: alice made more than 2 writes in a burst") {
		t.Fatalf("third write: %v (retry after %ds), want a rate-limit refusal with Retry-After 2", err, fault.RetryAfterSeconds(err))
	}
	list, err := w.s.ListIssues(w.ctx, as("alice"), ListIssues{Repo: "demo", State: "all", Limit: 10})
	if err != nil || len(list.Issues) != 1 {
		t.Fatalf("after the refusal: %d issues, %v; want only the first", len(list.Issues), err)
	}
	// Another principal has a bucket of its own; the operator none.
	if _, err := w.s.Comment(w.ctx, as("bob"), Comment{Issue: ref, Body: "bob's"}); err != nil {
		t.Fatalf("bob: %v", err)
	}
	err = w.s.DB.Write(w.ctx, func(tx *sql.Tx) error {
		for i := 0; i < 5; i++ {
			for _, p := range []string{access.Local, access.Anonymous} {
				if err := w.s.CountWrite(w.ctx, tx, p); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("operator and anonymous: %v", err)
	}
	// Two seconds later one write has refilled.
	w.now = w.now.Add(2 * time.Second)
	if _, err := w.s.Comment(w.ctx, as("alice"), Comment{Issue: ref, Body: "later"}); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
	if _, err := w.s.Comment(w.ctx, as("alice"), Comment{Issue: ref, Body: "too soon"}); fault.KindOf(err) != fault.RateLimited {
		t.Fatalf("right after the refill: %v", err)
	}
}
