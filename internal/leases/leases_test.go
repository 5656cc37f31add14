package leases

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

const repo = "demo.git"

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fixture struct {
	t   *testing.T
	ctx context.Context
	db  *store.DB
}

func newFixture(t *testing.T, issueIDs ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, ctx: ctx, db: db}
	f.exec("INSERT INTO repos(name, created_at) VALUES (?, ?), ('other.git', ?)", repo, "x", "x")
	for _, id := range issueIDs {
		f.issue(repo, id, "open")
	}
	return f
}

func (f *fixture) exec(q string, args ...any) {
	f.t.Helper()
	if err := f.db.Write(f.ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(f.ctx, q, args...); return err }); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) issue(repo, id, state string) {
	f.t.Helper()
	f.exec(`INSERT INTO issues(repo, id, title, state, author, created_at, updated_at) VALUES (?, ?, 't', ?, 'x', 'x', 'x')`, repo, id, state)
}

func (f *fixture) acquire(id, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	var l Lease
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		var err error
		l, err = Acquire(f.ctx, tx, repo, id, holder, ttl, false, now)
		return err
	})
	return l, err
}

func (f *fixture) mustAcquire(id, holder string, ttl time.Duration, now time.Time) Lease {
	f.t.Helper()
	l, err := f.acquire(id, holder, ttl, now)
	if err != nil {
		f.t.Fatalf("acquire %s by %s: %v", id, holder, err)
	}
	return l
}

func (f *fixture) renew(id, holder string, ttl time.Duration, now time.Time) (Lease, error) {
	var l Lease
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		var err error
		l, err = Renew(f.ctx, tx, repo, id, holder, ttl, now)
		return err
	})
	return l, err
}

func (f *fixture) release(id, holder string, now time.Time) (bool, error) {
	var ok bool
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		var err error
		ok, err = Release(f.ctx, tx, repo, id, holder, false, now)
		return err
	})
	return ok, err
}

func (f *fixture) fence(id, principal string, token int64, now time.Time) error {
	return f.db.Write(f.ctx, func(tx *sql.Tx) error { return Fence(f.ctx, tx, repo, id, principal, token, now) })
}

func (f *fixture) events(kind string) int {
	f.t.Helper()
	var n int
	if err := f.db.R().QueryRow("SELECT count(*) FROM events WHERE event = ?", kind).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) rowToken(id string) int64 {
	f.t.Helper()
	var n int64
	if err := f.db.R().QueryRow("SELECT token FROM leases WHERE repo = ? AND issue_id = ?", repo, id).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

func (f *fixture) tenures(id string, now time.Time) []Tenure {
	f.t.Helper()
	ts, err := Tenures(f.ctx, f.db.R(), repo, id, now)
	if err != nil {
		f.t.Fatal(err)
	}
	return ts
}

func (f *fixture) rawTenure(id string, token int64) (ended, reason sql.NullString) {
	f.t.Helper()
	if err := f.db.R().QueryRow("SELECT ended_at, end_reason FROM tenures WHERE repo = ? AND issue_id = ? AND token = ?",
		repo, id, token).Scan(&ended, &reason); err != nil {
		f.t.Fatal(err)
	}
	return ended, reason
}

func wantKind(t *testing.T, err error, k fault.Kind) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a refusal of kind %d, got success", k)
	}
	if got := fault.KindOf(err); got != k {
		t.Fatalf("want kind %d, got %d: %v", k, got, err)
	}
}

func ts(t time.Time) string { return store.FormatTime(t) }

const issueA = "aaaa000000000000000000000000000000000001"
const issueB = "bbbb000000000000000000000000000000000002"

func TestAcquireFreeIssueGetsTokenOneAndExpiryFromTTL(t *testing.T) {
	f := newFixture(t, issueA)
	l := f.mustAcquire(issueA, "alice", 15*time.Minute, t0)
	if l.Token != 1 || l.Holder != "alice" || l.Repo != repo || l.IssueID != issueA {
		t.Fatalf("got %+v", l)
	}
	if l.AcquiredAt.String() != ts(t0) || l.ExpiresAt == nil || l.ExpiresAt.String() != ts(t0.Add(15*time.Minute)) {
		t.Fatalf("times: %+v expires %v", l, l.ExpiresAt)
	}
	if f.events("issue.claimed") != 1 {
		t.Fatal("want one issue.claimed event")
	}
	if h, _ := LiveHolder(f.ctx, f.db.R(), repo, issueA, t0.Add(15*time.Minute-time.Millisecond)); h != "alice" {
		t.Fatalf("live holder just before expiry = %q", h)
	}
	if h, _ := LiveHolder(f.ctx, f.db.R(), repo, issueA, t0.Add(15*time.Minute)); h != "" {
		t.Fatalf("live holder at expiry = %q, want free", h)
	}
}

func TestOpenEndedLeaseNeverExpires(t *testing.T) {
	f := newFixture(t, issueA)
	l := f.mustAcquire(issueA, "alice", 0, t0)
	if l.ExpiresAt != nil {
		t.Fatalf("open-ended lease has expiry %v", *l.ExpiresAt)
	}
	far := t0.Add(10 * 365 * 24 * time.Hour)
	if _, err := f.acquire(issueA, "bob", time.Minute, far); fault.KindOf(err) != fault.Conflict {
		t.Fatalf("bob took an open-ended lease: %v", err)
	}
	if n, err := SweepExpired(f.ctx, f.db, far); err != nil || n != 0 {
		t.Fatalf("sweep = %d, %v", n, err)
	}
}

func TestHeldByOtherIsRefusedWithHolderAndExpiry(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	_, err := f.acquire(issueA, "bob", time.Minute, t0.Add(time.Second))
	wantKind(t, err, fault.Conflict)
	fe := fault.As(err)
	if fe.Fields["holder"] != "alice" || fe.Fields["expires_at"] != ts(t0.Add(time.Minute)) {
		t.Fatalf("refusal fields %v", fe.Fields)
	}
	if f.rowToken(issueA) != 1 {
		t.Fatal("a refused acquire changed the token")
	}
}

func TestReacquireByHolderKeepsTokenAndRefreshesExpiry(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	l := f.mustAcquire(issueA, "alice", 5*time.Minute, t0.Add(30*time.Second))
	if l.Token != 1 || l.AcquiredAt.String() != ts(t0) || l.ExpiresAt.String() != ts(t0.Add(30*time.Second+5*time.Minute)) {
		t.Fatalf("re-acquire gave %+v, expires %s", l, *l.ExpiresAt)
	}
	// A re-acquire without a TTL turns the same tenure open-ended.
	l = f.mustAcquire(issueA, "alice", 0, t0.Add(time.Minute))
	if l.Token != 1 || l.ExpiresAt != nil {
		t.Fatalf("open-ended re-acquire gave %+v", l)
	}
	if len(f.tenures(issueA, t0)) != 1 {
		t.Fatal("a re-acquire started a new tenure")
	}
}

func TestTakeoverAfterExpiryBumpsTokenAndRecordsExpiryOnce(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", 2*time.Second, t0)
	l := f.mustAcquire(issueA, "bob", time.Minute, t0.Add(2*time.Second))
	if l.Token != 2 || l.Holder != "bob" {
		t.Fatalf("takeover gave %+v", l)
	}
	ended, reason := f.rawTenure(issueA, 1)
	if !ended.Valid || ended.String != ts(t0.Add(2*time.Second)) || reason.String != "expired" {
		t.Fatalf("old tenure ended %v %v", ended, reason)
	}
	if f.events("lease.expired") != 1 {
		t.Fatalf("lease.expired events = %d", f.events("lease.expired"))
	}
	if n, _ := SweepExpired(f.ctx, f.db, t0.Add(10*time.Second)); n != 0 {
		t.Fatalf("sweep re-recorded %d tenures", n)
	}
	if f.events("lease.expired") != 1 {
		t.Fatal("lease.expired emitted twice")
	}
	// The holder whose lease expired gets a new tenure too, not the old one.
	f.mustAcquire(issueA, "alice", 0, t0.Add(10*time.Hour)) // bob's expired at t0+62s
	if f.rowToken(issueA) != 3 {
		t.Fatalf("token = %d, want 3", f.rowToken(issueA))
	}
}

func TestRenew(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	l, err := f.renew(issueA, "alice", 10*time.Minute, t0.Add(50*time.Second))
	if err != nil || l.Token != 1 || l.ExpiresAt.String() != ts(t0.Add(50*time.Second+10*time.Minute)) {
		t.Fatalf("renew gave %+v, %v", l, err)
	}
	// Without a TTL the last one is used again.
	l, err = f.renew(issueA, "alice", 0, t0.Add(time.Minute))
	if err != nil || l.ExpiresAt.String() != ts(t0.Add(11*time.Minute)) {
		t.Fatalf("renew without ttl gave %v, %v", l.ExpiresAt, err)
	}
	if f.events("lease.renewed") != 2 {
		t.Fatal("want two lease.renewed events")
	}

	_, err = f.renew(issueA, "bob", time.Minute, t0.Add(time.Minute))
	wantKind(t, err, fault.Conflict)
	if fault.As(err).Fields["holder"] != "alice" {
		t.Fatalf("not-holder refusal names %v", fault.As(err).Fields)
	}
	// After expiry even the former holder is not the holder any more.
	_, err = f.renew(issueA, "alice", time.Minute, t0.Add(11*time.Minute))
	wantKind(t, err, fault.Conflict)
	if f.rowToken(issueA) != 1 {
		t.Fatal("refused renewals changed the token")
	}
	// A lease on an issue never leased is not found.
	f.issue(repo, issueB, "open")
	_, err = f.renew(issueB, "alice", time.Minute, t0)
	wantKind(t, err, fault.NotFound)
}

func TestRenewOpenEndedStaysOpenEnded(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", 0, t0)
	l, err := f.renew(issueA, "alice", 0, t0.Add(time.Hour))
	if err != nil || l.ExpiresAt != nil {
		t.Fatalf("renew gave %+v, %v", l, err)
	}
}

func TestRelease(t *testing.T) {
	f := newFixture(t, issueA, issueB)
	// Never leased: not held, a success.
	if ok, err := f.release(issueB, "alice", t0); ok || err != nil {
		t.Fatalf("release of never-leased issue = %v, %v", ok, err)
	}
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	_, err := f.release(issueA, "bob", t0.Add(time.Second))
	wantKind(t, err, fault.Conflict)
	if fault.As(err).Fields["holder"] != "alice" {
		t.Fatal("refusal does not name the holder")
	}
	if ok, err := f.release(issueA, "alice", t0.Add(2*time.Second)); !ok || err != nil {
		t.Fatalf("release by holder = %v, %v", ok, err)
	}
	ended, reason := f.rawTenure(issueA, 1)
	if ended.String != ts(t0.Add(2*time.Second)) || reason.String != "released" {
		t.Fatalf("tenure ended %v %v", ended, reason)
	}
	if ok, err := f.release(issueA, "alice", t0.Add(3*time.Second)); ok || err != nil {
		t.Fatalf("second release = %v, %v, want not held", ok, err)
	}
	if f.events("lease.released") != 1 {
		t.Fatal("want one lease.released")
	}
	if f.rowToken(issueA) != 1 {
		t.Fatal("release reset the token")
	}
	if l := f.mustAcquire(issueA, "bob", time.Minute, t0.Add(4*time.Second)); l.Token != 2 {
		t.Fatalf("acquire after release: token %d", l.Token)
	}
}

func TestReleaseOfExpiredLeaseByAnyone(t *testing.T) {
	for _, swept := range []bool{false, true} {
		f := newFixture(t, issueA)
		f.mustAcquire(issueA, "alice", time.Minute, t0)
		later := t0.Add(2 * time.Minute)
		if swept {
			if n, err := SweepExpired(f.ctx, f.db, later); n != 1 || err != nil {
				t.Fatalf("sweep = %d, %v", n, err)
			}
		}
		if ok, err := f.release(issueA, "carol", later); !ok || err != nil {
			t.Fatalf("swept=%v: release of expired lease by another = %v, %v", swept, ok, err)
		}
		ended, reason := f.rawTenure(issueA, 1)
		if ended.String != ts(t0.Add(time.Minute)) || reason.String != "expired" {
			t.Fatalf("swept=%v: tenure ended %v %v", swept, ended, reason)
		}
		if f.events("lease.expired") != 1 || f.events("lease.released") != 0 {
			t.Fatalf("swept=%v: events expired=%d released=%d", swept, f.events("lease.expired"), f.events("lease.released"))
		}
		if ok, _ := f.release(issueA, "carol", later); ok {
			t.Fatal("second release of a freed lease said released")
		}
	}
}

func TestListShowsOnlyLiveLeasesOldestFirst(t *testing.T) {
	ids := []string{issueA, issueB, "cccc000000000000000000000000000000000003", "dddd000000000000000000000000000000000004"}
	f := newFixture(t, ids...)
	f.mustAcquire(ids[2], "carol", time.Hour, t0)                    // live, oldest
	f.mustAcquire(ids[0], "alice", time.Second, t0.Add(time.Second)) // expires
	f.mustAcquire(ids[1], "bob", 0, t0.Add(2*time.Second))           // live
	f.mustAcquire(ids[3], "dave", time.Hour, t0.Add(3*time.Second))  // released
	if _, err := f.release(ids[3], "dave", t0.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // reads change nothing
		list, err := List(f.ctx, f.db.R(), repo, t0.Add(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].IssueID != ids[2] || list[1].IssueID != ids[1] {
			t.Fatalf("list = %+v", list)
		}
	}
	if f.rowToken(ids[0]) != 1 {
		t.Fatal("a read touched an expired row")
	}
}

func TestTokensNeverResetAndRiseAcrossHolders(t *testing.T) {
	f := newFixture(t, issueA)
	now := t0
	holders := []string{"alice", "bob", "alice", "carol"}
	var last int64
	for i, h := range holders {
		l := f.mustAcquire(issueA, h, time.Minute, now)
		if l.Token != last+1 {
			t.Fatalf("step %d: token %d after %d", i, l.Token, last)
		}
		last = l.Token
		// Free it alternately by release and by expiry, with reads between.
		if i%2 == 0 {
			if _, err := f.release(issueA, h, now.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			now = now.Add(2 * time.Second)
		} else {
			now = now.Add(2 * time.Minute)
			if _, err := SweepExpired(f.ctx, f.db, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Current(f.ctx, f.db.R(), repo, issueA, now); err != nil {
			t.Fatal(err)
		}
		if f.rowToken(issueA) != last {
			t.Fatalf("step %d: row token %d, want %d", i, f.rowToken(issueA), last)
		}
	}
	if got := len(f.tenures(issueA, now)); got != len(holders) {
		t.Fatalf("%d tenures recorded, want %d", got, len(holders))
	}
}

func TestFence(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	// alice's first tenure expires; bob takes over, then alice again.
	f.mustAcquire(issueA, "bob", time.Minute, t0.Add(time.Minute))
	f.release(issueA, "bob", t0.Add(70*time.Second))
	f.mustAcquire(issueA, "alice", time.Minute, t0.Add(80*time.Second)) // token 3
	now := t0.Add(90 * time.Second)
	cases := []struct {
		who   string
		token int64
		ok    bool
	}{
		{"alice", 3, true},
		{"alice", 1, false}, // her own older tenure
		{"alice", 4, false},
		{"bob", 2, false},
		{"bob", 3, false}, // right token, wrong principal
	}
	for _, c := range cases {
		err := f.fence(issueA, c.who, c.token, now)
		if c.ok != (err == nil) {
			t.Errorf("fence(%s, %d) = %v", c.who, c.token, err)
		}
		if err != nil {
			wantKind(t, err, fault.Conflict)
			if fe := fault.As(err); fe.Fields["holder"] != "alice" {
				t.Errorf("fence refusal names %v", fe.Fields)
			}
		}
	}
	// After expiry the current token is stale too.
	err := f.fence(issueA, "alice", 3, t0.Add(140*time.Second))
	wantKind(t, err, fault.Conflict)
	if fault.As(err).Fields["holder"] != nil {
		t.Errorf("expired fence names holder %v", fault.As(err).Fields["holder"])
	}
}

func TestAcquireNeedsAnOpenIssue(t *testing.T) {
	f := newFixture(t)
	f.issue(repo, issueB, "closed")
	for _, id := range []string{issueA, issueB} {
		_, err := f.acquire(id, "alice", time.Minute, t0)
		wantKind(t, err, fault.NotFound)
	}
	// The same id in another repository is another issue.
	f.issue("other.git", issueA, "open")
	_, err := f.acquire(issueA, "alice", time.Minute, t0)
	wantKind(t, err, fault.NotFound)
}

func TestLeaseOnClosedIssueCanBeRenewedAndReleased(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	f.exec("UPDATE issues SET state = 'closed' WHERE id = ?", issueA)
	if _, err := f.renew(issueA, "alice", time.Minute, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.release(issueA, "alice", t0.Add(2*time.Second)); !ok || err != nil {
		t.Fatalf("release = %v, %v", ok, err)
	}
}

func TestForceOverridesLiveLease(t *testing.T) {
	f := newFixture(t, issueA)
	f.mustAcquire(issueA, "alice", 0, t0)
	var l Lease
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		var err error
		l, err = Acquire(f.ctx, tx, repo, issueA, "admin", time.Minute, true, t0.Add(time.Second))
		return err
	})
	if err != nil || l.Token != 2 || l.Holder != "admin" {
		t.Fatalf("forced acquire = %+v, %v", l, err)
	}
	if _, reason := f.rawTenure(issueA, 1); reason.String != EndOverridden {
		t.Fatalf("overridden tenure ended %v", reason)
	}
	ts, err := Tenures(f.ctx, f.db.R(), repo, issueA, t0.Add(time.Second))
	if err != nil || len(ts) != 2 || ts[0].EndedBy == nil || *ts[0].EndedBy != "admin" || ts[1].EndedBy != nil {
		t.Fatalf("tenures after the override = %+v, %v", ts, err)
	}
	err = f.db.Write(f.ctx, func(tx *sql.Tx) error {
		ok, err := Release(f.ctx, tx, repo, issueA, "root", true, t0.Add(2*time.Second))
		if !ok {
			t.Error("forced release said not held")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEndByMerge(t *testing.T) {
	f := newFixture(t, issueA, issueB)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		if err := EndByMerge(f.ctx, tx, repo, issueA, "bob", t0.Add(time.Second)); err != nil {
			return err
		}
		return EndByMerge(f.ctx, tx, repo, issueB, "bob", t0.Add(time.Second)) // never leased: no-op
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, reason := f.rawTenure(issueA, 1); reason.String != "merged" {
		t.Fatalf("tenure ended %v", reason)
	}
	if f.events("lease.released") != 1 {
		t.Fatal("want one lease.released")
	}
	if h, _ := LiveHolder(f.ctx, f.db.R(), repo, issueA, t0.Add(2*time.Second)); h != "" {
		t.Fatalf("holder after merge %q", h)
	}
}

func TestSweepExpired(t *testing.T) {
	f := newFixture(t, issueA, issueB)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	f.mustAcquire(issueB, "bob", time.Hour, t0)
	if n, err := SweepExpired(f.ctx, f.db, t0.Add(59*time.Second)); n != 0 || err != nil {
		t.Fatalf("early sweep = %d, %v", n, err)
	}
	if n, err := SweepExpired(f.ctx, f.db, t0.Add(2*time.Minute)); n != 1 || err != nil {
		t.Fatalf("sweep = %d, %v", n, err)
	}
	if n, _ := SweepExpired(f.ctx, f.db, t0.Add(3*time.Minute)); n != 0 {
		t.Fatalf("second sweep = %d", n)
	}
	if f.events("lease.expired") != 1 {
		t.Fatal("want one lease.expired")
	}
	// The row keeps its token and holder (expiry is a filter); the next
	// tenure still gets token 2.
	if f.rowToken(issueA) != 1 {
		t.Fatal("sweep touched the token")
	}
	if l := f.mustAcquire(issueA, "carol", 0, t0.Add(4*time.Minute)); l.Token != 2 {
		t.Fatalf("token after sweep %d", l.Token)
	}
	if f.events("lease.expired") != 1 {
		t.Fatal("takeover after the sweep emitted lease.expired again")
	}
}

func TestTTLBounds(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{{"1s", true}, {"15m", true}, {"720h", true}, {"999ms", false}, {"721h", false}, {"0", false}, {"-1m", false}, {"soon", false}} {
		_, err := ParseTTL(c.in)
		if c.ok != (err == nil) {
			t.Errorf("ParseTTL(%q) = %v", c.in, err)
		}
		if err != nil && fault.KindOf(err) != fault.Usage {
			t.Errorf("ParseTTL(%q): kind %d", c.in, fault.KindOf(err))
		}
	}
}

func TestCheckFreeAnswersLosersFromARead(t *testing.T) {
	f := newFixture(t, issueA, issueB)
	f.mustAcquire(issueA, "alice", time.Minute, t0)
	err := CheckFree(f.ctx, f.db.R(), repo, issueA, "bob", t0.Add(time.Second))
	wantKind(t, err, fault.Conflict)
	if fault.As(err).Fields["holder"] != "alice" {
		t.Fatalf("refusal fields %v", fault.As(err).Fields)
	}
	for _, c := range []struct {
		id, who string
		at      time.Time
	}{
		{issueA, "alice", t0.Add(time.Second)}, // the holder's own re-acquire
		{issueA, "bob", t0.Add(time.Minute)},   // expired
		{issueB, "bob", t0},                    // never leased
	} {
		if err := CheckFree(f.ctx, f.db.R(), repo, c.id, c.who, c.at); err != nil {
			t.Errorf("CheckFree(%.4s, %s, %s) = %v", c.id, c.who, ts(c.at), err)
		}
	}
}
