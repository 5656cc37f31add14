package issues

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fixture struct {
	t   *testing.T
	ctx context.Context
	db  *store.DB
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &fixture{t: t, ctx: ctx, db: db}
}

func (f *fixture) write(fn func(tx *sql.Tx) error) error { return f.db.Write(f.ctx, fn) }

func (f *fixture) exec(q string, args ...any) {
	f.t.Helper()
	if err := f.write(func(tx *sql.Tx) error { _, err := tx.ExecContext(f.ctx, q, args...); return err }); err != nil {
		f.t.Fatal(err)
	}
}

// insert files an issue with a chosen id, for prefix tests.
func (f *fixture) insert(repo, id, state string) {
	f.exec(`INSERT INTO issues(repo, id, title, state, author, created_at, updated_at) VALUES (?, ?, 't', ?, 'x', 'x', 'x')`, repo, id, state)
}

func (f *fixture) file(repo, author, title, body string) Issue {
	f.t.Helper()
	var is Issue
	err := f.write(func(tx *sql.Tx) error {
		var err error
		is, err = New(f.ctx, tx, repo, author, title, body, t0)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return is
}

func (f *fixture) events(kind string) int {
	var n int
	if err := f.db.R().QueryRow("SELECT count(*) FROM events WHERE event = ?", kind).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func TestNewGetComment(t *testing.T) {
	f := newFixture(t)
	is := f.file("demo.git", "alice", "  Crash on start  ", "see org/lib#abcd1234 and demo#beef")
	if len(is.ID) != 40 || is.Title != "Crash on start" || is.State != Open || is.Author != "alice" || is.Lease != nil {
		t.Fatalf("new issue %+v", is)
	}
	var c Comment
	err := f.write(func(tx *sql.Tx) error {
		var err error
		c, err = AddComment(f.ctx, tx, "demo.git", is.ID, "bob", "me too, like other#cafe", t0.Add(time.Minute))
		return err
	})
	if err != nil || c.Author != "bob" || len(c.ID) != 40 {
		t.Fatalf("comment %+v, %v", c, err)
	}
	f.exec("INSERT INTO patch_issues(repo, patch_id, issue_id) VALUES ('demo.git', 'p1p1p1p1', ?)", is.ID)
	d, err := Get(f.ctx, f.db.R(), "demo.git", is.ID, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Comments) != 1 || d.Comments[0].Body != "me too, like other#cafe" {
		t.Fatalf("comments %+v", d.Comments)
	}
	if !reflect.DeepEqual(d.Patches, []string{"p1p1p1p1"}) {
		t.Fatalf("patches %v", d.Patches)
	}
	wantRefs := []Ref{{Repo: "demo.git", Prefix: "beef"}, {Repo: "org/lib.git", Prefix: "abcd1234"}, {Repo: "other.git", Prefix: "cafe"}}
	if !reflect.DeepEqual(d.Refs, wantRefs) {
		t.Fatalf("refs %v", d.Refs)
	}
	if f.events("issue.filed") != 1 || f.events("issue.commented") != 1 {
		t.Fatal("missing events")
	}
	if _, err := Get(f.ctx, f.db.R(), "other.git", is.ID, t0); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("issue visible in another repository: %v", err)
	}
	err = f.write(func(tx *sql.Tx) error {
		_, err := AddComment(f.ctx, tx, "demo.git", "deadbeefdeadbeef", "bob", "x", t0)
		return err
	})
	if fault.KindOf(err) != fault.NotFound {
		t.Fatalf("comment on a missing issue: %v", err)
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	f := newFixture(t)
	for _, title := range []string{"", "   ", "two\nlines", strings.Repeat("x", MaxTitle+1), "bad \xff", "osc \x1b]0;pwned\x07", "c1 \u009b2J", "tab\tin"} {
		err := f.write(func(tx *sql.Tx) error {
			_, err := New(f.ctx, tx, "demo.git", "alice", title, "", t0)
			return err
		})
		if fault.KindOf(err) != fault.Usage {
			t.Errorf("title %q: %v", title, err)
		}
	}
	if f.events("issue.filed") != 0 {
		t.Fatal("a refused issue emitted an event")
	}
}

func TestListNewestFirstPaginated(t *testing.T) {
	f := newFixture(t)
	var all []Issue
	for i := 0; i < 5; i++ {
		all = append(all, f.file("demo.git", "alice", "issue", ""))
	}
	f.file("other.git", "alice", "elsewhere", "")
	if _, _, err := setStateW(f, all[1].ID, Closed); err != nil {
		t.Fatal(err)
	}
	ids := func(list []Issue) []string {
		var out []string
		for _, is := range list {
			out = append(out, is.ID)
		}
		return out
	}
	list, err := List(f.ctx, f.db.R(), "demo.git", "", 2, "", t0)
	if err != nil || !reflect.DeepEqual(ids(list), []string{all[4].ID, all[3].ID}) {
		t.Fatalf("page 1 %v, %v", ids(list), err)
	}
	list, err = List(f.ctx, f.db.R(), "demo.git", "open", 2, all[3].ID[:8], t0)
	if err != nil || !reflect.DeepEqual(ids(list), []string{all[2].ID, all[0].ID}) {
		t.Fatalf("page 2 %v, %v", ids(list), err)
	}
	list, _ = List(f.ctx, f.db.R(), "demo.git", "closed", 0, "", t0)
	if !reflect.DeepEqual(ids(list), []string{all[1].ID}) {
		t.Fatalf("closed %v", ids(list))
	}
	list, _ = List(f.ctx, f.db.R(), "demo.git", "all", 0, "", t0)
	if len(list) != 5 {
		t.Fatalf("all: %d", len(list))
	}
	if _, err := List(f.ctx, f.db.R(), "demo.git", "merged", 0, "", t0); fault.KindOf(err) != fault.Usage {
		t.Fatalf("bad state: %v", err)
	}
}

func setStateW(f *fixture, id string, state State) (Issue, bool, error) {
	var is Issue
	var changed bool
	err := f.write(func(tx *sql.Tx) error {
		var err error
		is, changed, err = SetState(f.ctx, tx, "demo.git", id, state, "alice", t0)
		return err
	})
	return is, changed, err
}

func TestSetStateIsIdempotent(t *testing.T) {
	f := newFixture(t)
	is := f.file("demo.git", "alice", "x", "")
	for i, c := range []struct {
		state   State
		changed bool
	}{{Closed, true}, {Closed, false}, {Open, true}, {Open, false}} {
		got, changed, err := setStateW(f, is.ID, c.state)
		if err != nil || changed != c.changed || got.State != c.state {
			t.Fatalf("step %d: %+v changed=%v %v", i, got, changed, err)
		}
	}
	if f.events("issue.closed") != 1 || f.events("issue.reopened") != 1 {
		t.Fatal("want one event per change")
	}
}

func TestCloseByMergeEndsLiveLease(t *testing.T) {
	f := newFixture(t)
	is := f.file("demo.git", "alice", "x", "")
	err := f.write(func(tx *sql.Tx) error {
		_, err := leases.Acquire(f.ctx, tx, "demo.git", is.ID, "bob", time.Hour, false, t0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the second is a no-op
		err = f.write(func(tx *sql.Tx) error {
			if err := CloseByMerge(f.ctx, tx, "demo.git", is.ID, "carol", "c0ffee", t0.Add(time.Minute)); err != nil {
				return err
			}
			return CloseByMerge(f.ctx, tx, "demo.git", "0123456789abcdef", "carol", "c0ffee", t0) // missing: no-op
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := Get(f.ctx, f.db.R(), "demo.git", is.ID, t0.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if d.State != Closed || d.Lease != nil || len(d.Tenures) != 1 || *d.Tenures[0].EndReason != "merged" {
		t.Fatalf("after merge %+v tenures %+v", d.Issue, d.Tenures)
	}
	if f.events("issue.closed") != 1 || f.events("lease.released") != 1 {
		t.Fatal("want one issue.closed and one lease.released")
	}
	var commit string
	f.db.R().QueryRow("SELECT json_extract(data, '$.commit') FROM events WHERE event = 'issue.closed'").Scan(&commit)
	if commit != "c0ffee" {
		t.Fatalf("issue.closed names commit %q", commit)
	}
}

func TestResolution(t *testing.T) {
	f := newFixture(t)
	f.insert("demo.git", "abcd0000000000000000000000000000000000aa", "open")
	f.insert("demo.git", "abcd0000000000000000000000000000000000bb", "closed")
	f.insert("demo.git", "ef01000000000000000000000000000000000000", "closed")
	f.insert("other.git", "9999000000000000000000000000000000000000", "open")
	// A lease row whose issue is gone from this repository's issues (say,
	// moved), freed: release and renew must still find it.
	f.exec("INSERT INTO leases(repo, issue_id, holder, token, acquired_at) VALUES ('demo.git', '7777000000000000000000000000000000000000', NULL, 3, 'x')")
	f.exec("INSERT INTO leases(repo, issue_id, holder, token, acquired_at) VALUES ('demo.git', 'ef01000000000000000000000000000000000000', NULL, 1, 'x')")
	f.exec("INSERT INTO leases(repo, issue_id, holder, token, acquired_at) VALUES ('other.git', '8888000000000000000000000000000000000000', 'x', 1, 'x')")
	type resolver func(context.Context, store.Querier, string, string) (string, error)
	cases := []struct {
		name   string
		fn     resolver
		prefix string
		want   string
		kind   fault.Kind
	}{
		{"any", Resolve, "abcd", "", fault.Usage}, // ambiguous
		{"any", Resolve, "ABCD0000000000000000000000000000000000AA", "abcd0000000000000000000000000000000000aa", 0},
		{"any", Resolve, "ef01", "ef01000000000000000000000000000000000000", 0},
		{"any", Resolve, "9999", "", fault.NotFound}, // another repository's
		{"any", Resolve, "abc", "", fault.Usage},     // too short
		{"any", Resolve, "xyz1", "", fault.Usage},    // not hex
		{"open", ResolveOpen, "abcd", "abcd0000000000000000000000000000000000aa", 0},
		{"open", ResolveOpen, "ef01", "", fault.NotFound},
		{"leased", ResolveLeased, "7777", "7777000000000000000000000000000000000000", 0},
		{"leased", ResolveLeased, "ef01", "ef01000000000000000000000000000000000000", 0},
		{"leased", ResolveLeased, "abcd", "", fault.NotFound},
		{"leased", ResolveLeased, "8888", "", fault.NotFound},
		{"either", ResolveIssueOrLease, "7777", "7777000000000000000000000000000000000000", 0},
		{"either", ResolveIssueOrLease, "ef01", "ef01000000000000000000000000000000000000", 0},
		{"either", ResolveIssueOrLease, "abcd", "", fault.Usage},
		{"either", ResolveIssueOrLease, "8888", "", fault.NotFound},
		{"either", ResolveIssueOrLease, "9999", "", fault.NotFound},
	}
	for _, c := range cases {
		got, err := c.fn(f.ctx, f.db.R(), "demo.git", c.prefix)
		if c.want != "" {
			if err != nil || got != c.want {
				t.Errorf("%s %s = %q, %v; want %s", c.name, c.prefix, got, err, c.want)
			}
			continue
		}
		if err == nil || fault.KindOf(err) != c.kind {
			t.Errorf("%s %s = %q, %v; want kind %d", c.name, c.prefix, got, err, c.kind)
		}
	}
	_, err := Resolve(f.ctx, f.db.R(), "demo.git", "abcd")
	if !strings.Contains(err.Error(), "abcd0000000000000000000000000000000000aa") || !strings.Contains(err.Error(), "abcd0000000000000000000000000000000000bb") {
		t.Errorf("ambiguity does not list candidates: %v", err)
	}
}

func TestParseRefs(t *testing.T) {
	cases := []struct {
		body string
		want []Ref
	}{
		{"fixes demo#abcd", []Ref{{Repo: "demo.git", Prefix: "abcd"}}},
		{"org/sub.git#abcdef12, again org/sub#abcdef12.", []Ref{{Repo: "org/sub.git", Prefix: "abcdef12"}}},
		{"upper case demo#ABCD is folded", []Ref{{Repo: "demo.git", Prefix: "abcd"}}},
		{"(lib#0123456789)", []Ref{{Repo: "lib.git", Prefix: "0123456789"}}},
		{"see https://example.com/page#abcd1234", nil},
		{"demo#abc is too short, demo#abcz is not hex", nil},
		{"#abcd alone is in the writer's repository", []Ref{{Repo: "here.git", Prefix: "abcd"}}},
		{"not &#1234; or a#b#cafe", nil},
		{"../etc#abcd and .hidden#abcd", nil},
		{"a#beef b#cafe", []Ref{{Repo: "a.git", Prefix: "beef"}, {Repo: "b.git", Prefix: "cafe"}}},
	}
	for _, c := range cases {
		if got := ParseRefs("here.git", c.body); !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseRefs(%q) = %v, want %v", c.body, got, c.want)
		}
	}
}

func TestFindRefs(t *testing.T) {
	text := "see org/demo#abcd and demo.git#0123456789, not ../x#abcd; demo#ABCD again"
	want := []RefAt{
		{Ref{Repo: "org/demo.git", Prefix: "abcd"}, 4, 17},
		{Ref{Repo: "demo.git", Prefix: "0123456789"}, 22, 41},
		{Ref{Repo: "demo.git", Prefix: "abcd"}, 58, 67},
	}
	got := FindRefs(text)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FindRefs = %v, want %v", got, want)
	}
	for _, r := range got {
		if w := text[r.Start:r.End]; !strings.HasSuffix(strings.ToLower(w), "#"+r.Prefix) {
			t.Errorf("text[%d:%d] = %q, not the reference %s", r.Start, r.End, w, r)
		}
	}
}

func TestMayChange(t *testing.T) {
	exp := store.At(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	free := Issue{ID: "abcd", Repo: "demo.git", Author: "alice"}
	leased := free
	leased.Lease = &leases.Lease{Holder: "bob", ExpiresAt: &exp}
	cases := []struct {
		name      string
		cur       Issue
		who       string
		lvl       access.Level
		state     bool
		wantKind  fault.Kind
		wantInMsg string
	}{
		{"author with read", free, "alice", access.Read, true, 0, ""},
		{"other with read", free, "carol", access.Read, true, fault.Denied, "write access to demo needed to close"},
		{"other with write", free, "carol", access.Write, true, 0, ""},
		{"anonymous", free, "", access.Admin, false, fault.Denied, ""},
		{"author, leased by other", leased, "alice", access.Write, true, fault.Conflict, "leased by bob"},
		{"author, leased by other, title only", leased, "alice", access.Read, false, 0, ""},
		{"holder", leased, "bob", access.Write, true, 0, ""},
		{"admin over a lease", leased, "carol", access.Admin, true, 0, ""},
	}
	for _, c := range cases {
		err := MayChange(c.cur, c.who, c.lvl, c.state, "close")
		if c.wantKind == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if fault.KindOf(err) != c.wantKind || !strings.Contains(fmt.Sprint(err), c.wantInMsg) {
			t.Errorf("%s: got %v, want kind %v with %q", c.name, err, c.wantKind, c.wantInMsg)
		}
	}
}
