package webhook_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/webhook"
	"github.com/collab-forge/collab/internal/webhook/subs"
)

// got is one delivery as a receiver saw it.
type got struct {
	delivery string
	kind     string
	payload  events.Event
}

// receiver is a real HTTP server on 127.0.0.1 that checks every request
// the way a subscriber should: POST, Content-Length, a valid signature
// made with the published key, headers agreeing with the signed body.
type receiver struct {
	t   *testing.T
	pub ed25519.PublicKey
	// answer picks the status for the n-th request (0-based); nil: 200.
	answer func(n int) int
	// hold, when set, keeps every request waiting until it is closed.
	hold <-chan struct{}

	mu  sync.Mutex
	n   int
	log []got
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	t := rc.t
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read body: %v", err)
		return
	}
	switch {
	case r.Method != http.MethodPost:
		t.Errorf("method %s", r.Method)
	case r.ContentLength != int64(len(body)) || r.Header.Get("Content-Length") != strconv.Itoa(len(body)):
		t.Errorf("Content-Length %q for %d bytes", r.Header.Get("Content-Length"), len(body))
	case !webhook.Verify(rc.pub, body, r.Header.Get("X-Collab-Signature")):
		t.Errorf("bad signature %q on %s", r.Header.Get("X-Collab-Signature"), body)
	}
	var ev events.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Errorf("body %s: %v", body, err)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(body, &fields)
	for _, f := range []string{"id", "event", "repo", "actor", "at", "data"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("payload lacks %q: %s", f, body)
		}
	}
	if r.Header.Get("X-Collab-Event") != ev.Event || r.Header.Get("X-Collab-Delivery") != strconv.FormatInt(ev.ID, 10) {
		t.Errorf("headers %q %q disagree with body %s", r.Header.Get("X-Collab-Event"), r.Header.Get("X-Collab-Delivery"), body)
	}
	rc.mu.Lock()
	n := rc.n
	rc.n++
	rc.mu.Unlock()
	if rc.hold != nil {
		<-rc.hold
	}
	status := http.StatusOK
	if rc.answer != nil {
		status = rc.answer(n)
	}
	rc.mu.Lock()
	rc.log = append(rc.log, got{delivery: r.Header.Get("X-Collab-Delivery"), kind: ev.Event, payload: ev})
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// started is how many requests have reached the handler, answered or not.
func (rc *receiver) started() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.n
}

// seen returns the requests answered so far.
func (rc *receiver) seen() []got {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]got(nil), rc.log...)
}

// ids returns the event ids of the requests so far, deduplicated as a
// receiver would by X-Collab-Delivery, in arrival order.
func (rc *receiver) ids() []int64 {
	var out []int64
	dup := map[int64]bool{}
	for _, g := range rc.seen() {
		if !dup[g.payload.ID] {
			dup[g.payload.ID] = true
			out = append(out, g.payload.ID)
		}
	}
	return out
}

type forge struct {
	db  *store.DB
	key ed25519.PrivateKey
	pub ed25519.PublicKey
}

func newForge(t *testing.T) *forge {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "collab.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"demo.git", "other.git"} {
		if _, err := db.R().ExecContext(ctx, "INSERT INTO repos(name, created_at) VALUES (?, ?)", r, store.FormatTime(time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	return &forge{db: db, key: key, pub: pub}
}

func (f *forge) receiver(t *testing.T) *receiver {
	return &receiver{t: t, pub: f.pub}
}

func (f *forge) subscribe(t *testing.T, url, repo string, kinds ...string) subs.Subscription {
	t.Helper()
	s, err := subs.Add(context.Background(), f.db, url, repo, kinds, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *forge) emit(t *testing.T, kind, repo string) int64 {
	t.Helper()
	var id int64
	err := f.db.Write(context.Background(), func(tx *sql.Tx) error {
		var err error
		id, err = events.Emit(context.Background(), tx, kind, repo, "ada", time.Now(), map[string]any{"n": 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// settled waits until subscription id's log holds n deliveries, none of
// them pending (a delivered attempt is written down just after the
// receiver answers), and returns them, newest first.
func (f *forge) settled(t *testing.T, id int64, n int) []subs.Delivery {
	t.Helper()
	var ds []subs.Delivery
	waitFor(t, "the delivery log", func() bool {
		var err error
		if ds, err = subs.Deliveries(context.Background(), f.db.R(), id, 0); err != nil {
			t.Fatal(err)
		}
		if len(ds) != n {
			return false
		}
		for _, d := range ds {
			if d.State == "pending" {
				return false
			}
		}
		return true
	})
	return ds
}

// delivery returns subscription id's delivery of event, once it has one.
func (f *forge) delivery(t *testing.T, id, event int64) (subs.Delivery, bool) {
	t.Helper()
	ds, err := subs.Deliveries(context.Background(), f.db.R(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.EventID == event {
			return d, true
		}
	}
	return subs.Delivery{}, false
}

// run starts the dispatcher until the test ends.
func (f *forge) run(t *testing.T, opts webhook.Options) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	go func() { done <- webhook.Run(ctx, f.db, f.key, log, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// fast is a retry policy for tests: the shape of the default, shrunk. An
// attempt never times out (a loaded machine may take seconds to answer), so
// the attempts a test counts are the ones its receiver chose to fail.
func fast() webhook.Options {
	return webhook.Options{
		Poll:    20 * time.Millisecond,
		Timeout: patience,
		Policy:  webhook.Policy{First: 100 * time.Millisecond, Max: 400 * time.Millisecond, GiveUp: time.Hour, MinAttempts: 3},
		Sweep:   func(context.Context, *store.DB, time.Time) (int, error) { return 0, nil },
	}
}

// patience bounds every wait for the dispatcher or collab-web. It is only
// spent when something is broken: a loaded machine (an ssh login of 4.5 s,
// a test suite of 17 minutes) is slow, not stuck, and no test here asserts
// how fast anything was. Speed is measured in bench/.
const patience = 2 * time.Minute

// waitFor polls cond until it holds, failing the test after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeClock is a retry schedule's clock that moves only when the test
// moves it, so that the schedule can be checked exactly however slow the
// machine is.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestEveryKindArrivesSignedAndFiltered(t *testing.T) {
	f := newForge(t)
	all, narrow := f.receiver(t), f.receiver(t)
	allSrv, narrowSrv := httptest.NewServer(all), httptest.NewServer(narrow)
	defer allSrv.Close()
	defer narrowSrv.Close()
	f.emit(t, events.IssueFiled, "demo.git") // before the subscription: not delivered
	f.subscribe(t, allSrv.URL+"/hook?x=1", "")
	f.subscribe(t, narrowSrv.URL, "demo", events.IssueClosed, events.MergeRecorded)
	var want, wantNarrow []int64
	for _, repo := range []string{"demo.git", "other.git"} {
		for _, k := range events.Kinds {
			id := f.emit(t, k, repo)
			want = append(want, id)
			if repo == "demo.git" && (k == events.IssueClosed || k == events.MergeRecorded) {
				wantNarrow = append(wantNarrow, id)
			}
		}
	}
	f.run(t, fast())
	waitFor(t, "every event", func() bool { return len(all.ids()) >= len(want) })
	waitFor(t, "the narrow events", func() bool { return len(narrow.ids()) >= len(wantNarrow) })
	// Nothing else may come. Delivery is in order, so once a last event
	// that both subscriptions want has arrived, anything wrongly on its way
	// before it has too.
	last := f.emit(t, events.IssueClosed, "demo.git")
	want, wantNarrow = append(want, last), append(wantNarrow, last)
	waitFor(t, "the last event", func() bool { return slices.Contains(all.ids(), last) && slices.Contains(narrow.ids(), last) })
	if g := all.ids(); !equalIDs(g, want) {
		t.Errorf("all-events receiver got %v, want %v", g, want)
	}
	if g := narrow.ids(); !equalIDs(g, wantNarrow) {
		t.Errorf("narrow receiver got %v, want %v", g, wantNarrow)
	}
	kinds := map[string]bool{}
	for _, g := range all.seen() {
		kinds[g.kind] = true
		if g.payload.Actor != "ada" || string(g.payload.Data) != `{"n":1}` || g.payload.At == "" {
			t.Errorf("payload %+v", g.payload)
		}
	}
	if len(kinds) != len(events.Kinds) {
		t.Errorf("kinds delivered: %v", kinds)
	}
}

// A receiver that is down gets everything once it is back, in order,
// although events kept coming while it was down: one after each of the
// first event's failed attempts.
func TestReceiverDownThenBack(t *testing.T) {
	f := newForge(t)
	rc := f.receiver(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // down: connections are refused
	s := f.subscribe(t, "http://"+addr+"/", "")
	opts := fast()
	opts.Policy.Max = 2 * time.Second
	f.run(t, opts)
	want := []int64{f.emit(t, events.IssueCommented, "demo.git")}
	const down = 3 // failed attempts at the first event
	for n := 1; n <= down; n++ {
		waitFor(t, fmt.Sprintf("failed attempt %d", n), func() bool {
			d, ok := f.delivery(t, s.ID, want[0])
			return ok && d.Attempts >= n
		})
		want = append(want, f.emit(t, events.IssueCommented, "demo.git"))
	}
	l, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(rc)
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	want = append(want, f.emit(t, events.IssueClosed, "demo.git"))
	waitFor(t, "the backlog", func() bool { return len(rc.ids()) >= len(want) })
	if g := rc.ids(); !equalIDs(g, want) {
		t.Errorf("got %v, want %v", g, want)
	}
	// The first event's failed attempts are in the log, then its success.
	ds := f.settled(t, s.ID, len(want))
	first := ds[len(ds)-1]
	if first.EventID != want[0] || first.State != "delivered" || len(first.Log) < down+1 {
		t.Fatalf("first delivery %+v", first)
	}
	for _, a := range first.Log[:len(first.Log)-1] {
		if a.Status != 0 || a.Error == "" {
			t.Errorf("failed attempt logged as %+v", a)
		}
	}
	if last := first.Log[len(first.Log)-1]; last.Status != 200 || last.Error != "" {
		t.Errorf("final attempt logged as %+v", last)
	}
}

// A receiver answering 500 is retried on the default policy's schedule,
// every attempt logged, until it answers 2xx. The dispatcher runs on a
// clock that only the test moves, so the schedule is checked exactly and
// the machine's load cannot matter: each retry is made when its due time
// comes and not before, and each delay is the policy's for that attempt
// (the contract's first retry within 5 s, doubling, capped at 5 minutes,
// jittered).
func TestServerErrorRetriedOnSchedule(t *testing.T) {
	const failures = 10 // enough to reach the cap
	f := newForge(t)
	rc := f.receiver(t)
	rc.answer = func(n int) int {
		if n < failures {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s := f.subscribe(t, srv.URL, "")
	policy := webhook.DefaultPolicy()
	clock := &fakeClock{now: time.Now().Truncate(time.Millisecond)} // stored times have milliseconds
	opts := fast()
	opts.Policy, opts.Now = policy, clock.Now
	f.run(t, opts)
	id := f.emit(t, events.ReviewPosted, "demo.git")
	due := clock.Now()
	var delays []time.Duration
	for n := 1; n <= failures; n++ {
		var d subs.Delivery
		waitFor(t, fmt.Sprintf("failed attempt %d", n), func() bool {
			var ok bool
			d, ok = f.delivery(t, s.ID, id)
			return ok && d.Attempts >= n
		})
		if d.Attempts != n || d.State != "pending" || len(d.Log) != n {
			t.Fatalf("after failure %d with the clock at its due time: %+v", n, d)
		}
		at, err := store.ParseTime(d.Log[n-1].At)
		if err != nil {
			t.Fatal(err)
		}
		if !at.Equal(due) {
			t.Fatalf("attempt %d made at %v, want at its due time %v", n, at, due)
		}
		next, err := store.ParseTime(d.NextAt)
		if err != nil {
			t.Fatal(err)
		}
		delay := next.Sub(at)
		delays = append(delays, delay)
		// Jitter: between half and all of the nominal delay (less the
		// stored time's lost sub-millisecond).
		if lo, hi := policy.Delay(n, 0), policy.Delay(n, 1); delay < lo-time.Millisecond || delay > hi {
			t.Errorf("retry %d scheduled after %v, want in [%v, %v]", n, delay, lo, hi)
		}
		due = next
		clock.Set(due)
	}
	if delays[0] > 5*time.Second || slices.Max(delays) > 5*time.Minute || delays[len(delays)-1] < 5*time.Minute/2 {
		t.Errorf("delays %v: want the first within 5 s, the last at the 5-minute cap", delays)
	}
	ds := f.settled(t, s.ID, 1)
	if ds[0].EventID != id || ds[0].State != "delivered" || ds[0].Attempts != failures+1 || len(ds[0].Log) != failures+1 {
		t.Fatalf("deliveries %+v", ds)
	}
	for i, a := range ds[0].Log {
		want := 500
		if i == failures {
			want = 204
		}
		if a.Status != want || (want == 500) != (a.Error != "") {
			t.Errorf("attempt %d logged as %+v", i, a)
		}
	}
	if last, _ := store.ParseTime(ds[0].Log[failures].At); !last.Equal(due) {
		t.Errorf("final attempt at %v, want its due time %v", last, due)
	}
	if n := len(rc.seen()); n != failures+1 {
		t.Errorf("receiver had %d requests, want %d", n, failures+1)
	}
}

// A receiver that does not answer does not hold back another: the quick
// one gets every event while the slow one still holds its first request.
// Then the slow one gets them all too.
func TestSlowReceiverDoesNotBlockOthers(t *testing.T) {
	f := newForge(t)
	slow, quick := f.receiver(t), f.receiver(t)
	hold := make(chan struct{})
	slow.hold = hold
	slowSrv, quickSrv := httptest.NewServer(slow), httptest.NewServer(quick)
	defer quickSrv.Close()
	defer slowSrv.Close()
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release() // before slowSrv.Close, which waits for its handlers
	f.subscribe(t, slowSrv.URL, "")
	f.subscribe(t, quickSrv.URL, "")
	f.run(t, fast())
	var want []int64
	for range 10 {
		want = append(want, f.emit(t, events.IssueFiled, "demo.git"))
	}
	waitFor(t, "the slow receiver's first request", func() bool { return slow.started() >= 1 })
	waitFor(t, "the quick receiver", func() bool { return len(quick.ids()) == len(want) })
	if n := slow.started(); n != 1 {
		t.Errorf("slow receiver had %d requests while holding its first", n)
	}
	if !equalIDs(quick.ids(), want) {
		t.Errorf("quick got %v, want %v", quick.ids(), want)
	}
	release()
	waitFor(t, "the slow receiver", func() bool { return len(slow.ids()) == len(want) })
	if !equalIDs(slow.ids(), want) {
		t.Errorf("slow got %v, want %v", slow.ids(), want)
	}
}

// A delivery that keeps failing past its retry window is given up (failed)
// and the events after it go on; redeliver sends it again.
func TestGiveUpThenRedeliver(t *testing.T) {
	f := newForge(t)
	rc := f.receiver(t)
	var mu sync.Mutex
	refuse := int64(-1)
	rc.answer = func(int) int { return http.StatusOK }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		bad := r.Header.Get("X-Collab-Delivery") == strconv.FormatInt(refuse, 10)
		mu.Unlock()
		if bad {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s := f.subscribe(t, srv.URL, "")
	first := f.emit(t, events.IssueFiled, "demo.git")
	mu.Lock()
	refuse = first
	mu.Unlock()
	second := f.emit(t, events.IssueClosed, "demo.git")
	opts := fast()
	opts.Policy.GiveUp = 300 * time.Millisecond
	f.run(t, opts)
	waitFor(t, "the second event", func() bool { return len(rc.ids()) == 1 })
	if g := rc.ids(); g[0] != second {
		t.Fatalf("got %v", g)
	}
	ds := f.settled(t, s.ID, 2)
	failed := ds[1]
	if failed.EventID != first || failed.State != "failed" || failed.Attempts < 3 || failed.Log[0].Status != 400 {
		t.Fatalf("given-up delivery %+v", failed)
	}
	mu.Lock()
	refuse = -1
	mu.Unlock()
	if _, err := subs.Redeliver(context.Background(), f.db, failed.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the redelivery", func() bool { return len(rc.ids()) == 2 })
	if g := rc.ids(); g[1] != first {
		t.Fatalf("got %v", g)
	}
	if _, err := subs.Redeliver(context.Background(), f.db, 999, time.Now()); err == nil {
		t.Error("redelivered a missing delivery")
	}
}

// lease.expired arrives once per expired tenure: for a lease that expired
// before the dispatcher started, one that expires while it runs, and one
// that a takeover acquire announced itself.
func TestLeaseExpiredOncePerTenure(t *testing.T) {
	f := newForge(t)
	rc := f.receiver(t)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f.subscribe(t, srv.URL, "", events.LeaseExpired)
	ctx := context.Background()
	now := time.Now()
	var ids []string
	err := f.db.Write(ctx, func(tx *sql.Tx) error {
		for i, ttl := range []time.Duration{time.Second, 2 * time.Second, time.Second} {
			is, err := issues.New(ctx, tx, "demo.git", "ada", "issue "+strconv.Itoa(i), "", now.Add(-time.Hour))
			if err != nil {
				return err
			}
			ids = append(ids, is.ID)
			at := now.Add(-time.Hour) // long expired, as if while collab-web was down
			if i == 1 {
				at = now // expires while the sweeper runs
			}
			if _, err := leases.Acquire(ctx, tx, "demo.git", is.ID, "bob", ttl, false, at); err != nil {
				return err
			}
		}
		// A takeover of the third: the acquire announces the expiry itself.
		_, err := leases.Acquire(ctx, tx, "demo.git", ids[2], "carol", 0, false, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var sweeps atomic.Int64
	opts := fast()
	opts.Sweep = func(ctx context.Context, db *store.DB, now time.Time) (int, error) {
		n, err := leases.SweepExpired(ctx, db, now)
		sweeps.Add(1)
		return n, err
	}
	opts.SweepEvery = 50 * time.Millisecond
	f.run(t, opts)
	waitFor(t, "three lease.expired", func() bool { return len(rc.ids()) >= 3 })
	// Several more sweeps must announce nothing new. Then a last event the
	// subscription wants: delivery is in order, so anything those sweeps
	// announced arrives before it.
	after := sweeps.Load()
	waitFor(t, "three more sweeps", func() bool { return sweeps.Load() >= after+3 })
	last := f.emit(t, events.LeaseExpired, "demo.git")
	waitFor(t, "the last event", func() bool { return slices.Contains(rc.ids(), last) })
	per := map[string]int{}
	for _, g := range rc.seen() {
		if g.payload.ID == last {
			continue
		}
		var ten struct {
			IssueID string `json:"issue_id"`
			Token   int64  `json:"token"`
		}
		if err := json.Unmarshal(g.payload.Data, &ten); err != nil {
			t.Fatal(err)
		}
		per[ten.IssueID+"/"+strconv.FormatInt(ten.Token, 10)]++
	}
	if len(per) != 3 {
		t.Errorf("expired tenures announced: %v", per)
	}
	for k, n := range per {
		if n != 1 {
			t.Errorf("tenure %s announced %d times", k, n)
		}
	}
}

// A commit by another writer wakes the dispatcher: with polling slowed to
// an hour, events still arrive, one after another. (That the fallback poll
// meets the contract's second is TestDefaultsMeetContract.)
func TestCommitWakesDispatcher(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("commit wake-ups use inotify")
	}
	f := newForge(t)
	rc := f.receiver(t)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	f.subscribe(t, srv.URL, "")
	opts := fast()
	opts.Poll = time.Hour // far past patience: only a wake-up delivers
	f.run(t, opts)
	// The first event may come with the dispatcher's first look at the
	// log; each later one is committed after that and needs a wake-up.
	for i := range 5 {
		f.emit(t, events.IssueFiled, "demo.git")
		waitFor(t, fmt.Sprintf("event %d", i), func() bool { return len(rc.ids()) == i+1 })
	}
}

// An event whose stored data is not JSON is given up at once (logged as
// failed) instead of holding its subscription back.
func TestUnencodableEventDoesNotBlock(t *testing.T) {
	f := newForge(t)
	rc := f.receiver(t)
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s := f.subscribe(t, srv.URL, "")
	if _, err := f.db.R().Exec("INSERT INTO events(event, repo, actor, at, data) VALUES ('issue.filed', 'demo.git', 'ada', ?, 'not json')",
		store.FormatTime(time.Now())); err != nil {
		t.Fatal(err)
	}
	good := f.emit(t, events.IssueClosed, "demo.git")
	f.run(t, fast())
	waitFor(t, "the good event", func() bool { return len(rc.ids()) == 1 })
	if g := rc.ids(); g[0] != good {
		t.Fatalf("got %v", g)
	}
	ds := f.settled(t, s.ID, 2)
	if len(ds) != 2 || ds[1].State != "failed" || !strings.Contains(ds[1].Log[0].Error, "encode event") {
		t.Fatalf("deliveries %+v", ds)
	}
}
