package leases

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

// label gives the issue id of repo the labels ls, as issues.EditLabels
// stores them (open mirrors the issue's state).
func (f *fixture) label(id string, ls ...string) {
	f.t.Helper()
	for _, l := range ls {
		f.exec(`INSERT INTO issue_labels(repo, label, seq, open)
			SELECT repo, ?, seq, CASE WHEN state = 'open' THEN 1 ELSE 0 END FROM issues WHERE repo = ? AND id = ?`, l, repo, id)
	}
}

func (f *fixture) next(holder string, ls []string, ttl time.Duration, now time.Time) (Lease, error) {
	var l Lease
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		var err error
		l, err = AcquireNext(f.ctx, tx, repo, holder, ls, ttl, now)
		return err
	})
	return l, err
}

func (f *fixture) mustNext(holder string, ls []string, ttl time.Duration, now time.Time) Lease {
	f.t.Helper()
	l, err := f.next(holder, ls, ttl, now)
	if err != nil {
		f.t.Fatalf("next for %s %v: %v", holder, ls, err)
	}
	return l
}

func (f *fixture) count(query string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.R().QueryRow(query, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// issueN is the id of the n-th issue a test files (oldest first).
func issueN(n int) string { return fmt.Sprintf("%040x", 0xc0de0000+n) }

func TestNextHandsOutOldestFreeIssueFirst(t *testing.T) {
	f := newFixture(t)
	for n := 1; n <= 4; n++ {
		f.issue(repo, issueN(n), "open")
	}
	f.issue("other.git", issueN(0), "open") // another repository's issue is never handed out
	f.exec("UPDATE issues SET state = 'closed' WHERE id = ?", issueN(2))
	f.mustAcquire(issueN(1), "carol", time.Minute, t0) // leased by name
	l := f.mustNext("alice", nil, time.Minute, t0)
	if l.IssueID != issueN(3) || l.Holder != "alice" || l.Token != 1 || l.Repo != repo {
		t.Fatalf("first next: %+v, want issue 3 (1 leased, 2 closed)", l)
	}
	if l = f.mustNext("alice", nil, time.Minute, t0); l.IssueID != issueN(4) {
		t.Fatalf("second next by the same holder: %+v, want issue 4 (its own lease on 3 is live)", l)
	}
	before := f.count("SELECT count(*) FROM events")
	_, err := f.next("bob", nil, time.Minute, t0)
	wantKind(t, err, fault.NotFound)
	if msg := fault.As(err).Msg; !strings.Contains(msg, "nothing to claim") || strings.Contains(msg, "\n") {
		t.Fatalf("refusal %q", msg)
	}
	if after := f.count("SELECT count(*) FROM events"); after != before || f.count("SELECT count(*) FROM tenures") != 3 {
		t.Fatalf("an empty queue wrote something: events %d -> %d", before, after)
	}
	if f.events("issue.claimed") != 3 {
		t.Fatalf("issue.claimed %d, want 3", f.events("issue.claimed"))
	}
	// A released issue is free again, with its next token.
	if ok, err := f.release(issueN(3), "alice", t0); !ok || err != nil {
		t.Fatalf("release: %v %v", ok, err)
	}
	if l = f.mustNext("bob", nil, 0, t0); l.IssueID != issueN(3) || l.Token != 2 || l.ExpiresAt != nil {
		t.Fatalf("after release: %+v, want issue 3, token 2, open-ended", l)
	}
}

func TestNextTakesOverAnExpiredLeaseAndFencesItsHolder(t *testing.T) {
	f := newFixture(t)
	f.issue(repo, issueN(1), "open")
	f.issue(repo, issueN(2), "open")
	old := f.mustNext("alice", nil, time.Minute, t0)
	if old.IssueID != issueN(1) {
		t.Fatalf("first: %+v", old)
	}
	// Just before expiry the lease is live: the queue goes on to issue 2.
	if l := f.mustNext("bob", nil, time.Minute, t0.Add(time.Minute-time.Millisecond)); l.IssueID != issueN(2) {
		t.Fatalf("before expiry: %+v, want issue 2", l)
	}
	// At expiry issue 1 is free again: handed out with the next token, and
	// the expired tenure is recorded in the same transaction.
	at := t0.Add(time.Minute)
	l := f.mustNext("bob", nil, time.Minute, at)
	if l.IssueID != issueN(1) || l.Token != 2 || l.Holder != "bob" {
		t.Fatalf("after expiry: %+v, want issue 1, token 2", l)
	}
	if f.events("lease.expired") != 1 {
		t.Fatalf("lease.expired %d, want 1", f.events("lease.expired"))
	}
	if ended, reason := f.rawTenure(issueN(1), 1); !ended.Valid || reason.String != EndExpired {
		t.Fatalf("tenure 1: ended %v reason %v", ended, reason)
	}
	// The old holder is fenced off, even though it still thinks it holds
	// the lease; the new token passes.
	wantKind(t, f.fence(issueN(1), "alice", old.Token, at), fault.Conflict)
	if err := f.fence(issueN(1), "bob", l.Token, at); err != nil {
		t.Fatalf("new holder fenced: %v", err)
	}
	// A sweep after the takeover records nothing twice.
	if n, err := SweepExpired(f.ctx, f.db, at.Add(time.Hour)); err != nil || f.events("lease.expired") != 1+n {
		t.Fatalf("sweep %d, %v; lease.expired %d", n, err, f.events("lease.expired"))
	}
}

func TestNextLabelsMustAllMatch(t *testing.T) {
	f := newFixture(t)
	for n := 1; n <= 5; n++ {
		f.issue(repo, issueN(n), "open")
	}
	f.label(issueN(1), "a")
	f.label(issueN(2), "b")
	f.label(issueN(3), "a", "b", "c")
	f.label(issueN(4), "b", "a")
	f.exec("UPDATE issues SET state = 'closed' WHERE id = ?", issueN(4))
	f.label(issueN(5), "a", "b")
	for i, c := range []struct {
		ls   []string
		want string
	}{
		{[]string{"a", "b"}, issueN(3)},
		{[]string{"b", "a"}, issueN(5)}, // 4 is closed
		{[]string{"a", "b"}, ""},
		{[]string{"a"}, issueN(1)},
		{[]string{"b"}, issueN(2)},
		{[]string{"c"}, ""},
		{[]string{"nope"}, ""},
	} {
		l, err := f.next("w", c.ls, time.Minute, t0)
		if c.want == "" {
			wantKind(t, err, fault.NotFound)
			continue
		}
		if err != nil || l.IssueID != c.want {
			t.Fatalf("case %d %v: %+v %v, want %s", i, c.ls, l, err, c.want)
		}
	}
	// Reopening issue 4 puts it back in the queue (the trigger keeps open).
	f.exec("UPDATE issues SET state = 'open' WHERE id = ?", issueN(4))
	if l := f.mustNext("w", []string{"a", "b"}, time.Minute, t0); l.IssueID != issueN(4) {
		t.Fatalf("reopened: %+v", l)
	}
}

func TestNextRefusesBadInputWithoutWriting(t *testing.T) {
	f := newFixture(t)
	f.issue(repo, issueN(1), "open")
	many := make([]string, 51)
	for i := range many {
		many[i] = fmt.Sprintf("l%d", i)
	}
	for _, c := range []struct {
		ls  []string
		ttl time.Duration
	}{
		{[]string{"Bad"}, time.Minute},
		{[]string{"ok", "-x"}, time.Minute},
		{many, time.Minute},
		{nil, time.Millisecond},
		{nil, 721 * time.Hour},
	} {
		_, err := f.next("w", c.ls, c.ttl, t0)
		wantKind(t, err, fault.Usage)
	}
	if n := f.count("SELECT count(*) FROM events"); n != 0 {
		t.Fatalf("%d events written by refused requests", n)
	}
}

// Many writers asking at once (goroutines here; processes in the
// lease_next scripts) each get a different issue, with token 1, and those
// past the end of the queue are told so.
func TestNextConcurrentClaimsAreDistinct(t *testing.T) {
	const issues, askers = 16, 24
	f := newFixture(t)
	for n := 1; n <= issues; n++ {
		f.issue(repo, issueN(n), "open")
	}
	var mu sync.Mutex
	got := map[string]string{}
	empty := 0
	var wg sync.WaitGroup
	for w := 0; w < askers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			who := fmt.Sprintf("w%d", w)
			l, err := f.next(who, nil, time.Minute, t0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && l.Token == 1 && got[l.IssueID] == "":
				got[l.IssueID] = who
			case fault.KindOf(err) == fault.NotFound:
				empty++
			default:
				t.Errorf("%s: %+v %v (held by %q)", who, l, err, got[l.IssueID])
			}
		}()
	}
	wg.Wait()
	if len(got) != issues || empty != askers-issues {
		t.Fatalf("%d issues handed out, %d told the queue is empty", len(got), empty)
	}
}
