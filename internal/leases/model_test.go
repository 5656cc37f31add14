package leases

import (
	"database/sql"
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

// model is the reference semantics of one lease row, written as plainly as
// possible, for the randomized test to compare the real thing with.
type model struct {
	exists bool
	holder string // "" = free
	token  int64
	exp    *time.Time // nil = open-ended
	ttl    time.Duration
	start  time.Time
	ends   map[int64]string // how each ended tenure ended
}

func (m *model) end(reason string) {
	if m.ends == nil {
		m.ends = map[int64]string{}
	}
	m.ends[m.token] = reason
	m.holder = ""
}

func (m *model) live(now time.Time) bool {
	return m.holder != "" && (m.exp == nil || m.exp.After(now))
}

func (m *model) setExp(now time.Time, ttl time.Duration) {
	m.ttl = ttl
	m.exp = nil
	if ttl != 0 {
		e := now.Add(ttl)
		m.exp = &e
	}
}

// outcome is what an operation returned, comparable between model and real.
type outcome struct {
	kind  string // ok, conflict, notfound
	token int64
	exp   string
	flag  bool
}

func okOut(token int64, exp *time.Time) outcome {
	o := outcome{kind: "ok", token: token}
	if exp != nil {
		o.exp = ts(*exp)
	}
	return o
}

func (m *model) acquire(h string, ttl time.Duration, now time.Time) outcome {
	if m.live(now) {
		if m.holder != h {
			return outcome{kind: "conflict"}
		}
		m.setExp(now, ttl)
		return okOut(m.token, m.exp)
	}
	if m.holder != "" {
		m.end(EndExpired)
	}
	m.exists, m.holder, m.token, m.start = true, h, m.token+1, now
	m.setExp(now, ttl)
	return okOut(m.token, m.exp)
}

// force is an admin's override: a live lease of another ends
// (overridden) and a new tenure starts; otherwise it is a plain acquire.
func (m *model) force(h string, ttl time.Duration, now time.Time) outcome {
	if m.live(now) && m.holder != h {
		m.end(EndOverridden)
	}
	return m.acquire(h, ttl, now)
}

// merge ends a live lease because a merge closed the issue.
func (m *model) merge(now time.Time) {
	if m.live(now) {
		m.end(EndMerged)
	}
}

func (m *model) renew(h string, ttl time.Duration, now time.Time) outcome {
	switch {
	case !m.exists:
		return outcome{kind: "notfound"}
	case !m.live(now) || m.holder != h:
		return outcome{kind: "conflict"}
	}
	if ttl == 0 {
		ttl = m.ttl
	}
	m.setExp(now, ttl)
	return okOut(m.token, m.exp)
}

func (m *model) release(h string, now time.Time) outcome {
	switch {
	case m.holder == "":
		return outcome{kind: "ok", flag: false}
	case m.live(now) && m.holder != h:
		return outcome{kind: "conflict"}
	case m.live(now):
		m.end(EndReleased)
	default:
		m.end(EndExpired)
	}
	return outcome{kind: "ok", flag: true}
}

func (m *model) fence(h string, token int64, now time.Time) outcome {
	if m.live(now) && m.holder == h && m.token == token {
		return outcome{kind: "ok"}
	}
	return outcome{kind: "conflict"}
}

func realOut(l Lease, flag bool, err error) outcome {
	if err != nil {
		switch fault.KindOf(err) {
		case fault.Conflict:
			return outcome{kind: "conflict"}
		case fault.NotFound:
			return outcome{kind: "notfound"}
		}
		return outcome{kind: "error: " + err.Error()}
	}
	o := outcome{kind: "ok", token: l.Token, flag: flag}
	if l.ExpiresAt != nil {
		o.exp = l.ExpiresAt.String()
	}
	return o
}

// TestModel runs thousands of random operations on a few issues and
// holders, with a clock that jumps past expiries, and checks every result,
// the live list and the event log against the model.
func TestModel(t *testing.T) {
	steps := 4000
	if testing.Short() {
		steps = 500
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	issueIDs := []string{issueA, issueB, "cccc000000000000000000000000000000000003"}
	holders := []string{"alice", "bob", "carol"}
	ttls := []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second}
	f := newFixture(t, issueIDs...)
	models := map[string]*model{}
	for _, id := range issueIDs {
		models[id] = &model{}
	}
	now := t0
	for step := 0; step < steps; step++ {
		id := issueIDs[rng.Intn(len(issueIDs))]
		h := holders[rng.Intn(len(holders))]
		ttl := ttls[rng.Intn(len(ttls))]
		m := models[id]
		var want, got outcome
		var op string
		switch r := rng.Intn(100); {
		case r < 30:
			op = fmt.Sprintf("acquire %s %s", h, ttl)
			want = m.acquire(h, ttl, now)
			l, err := f.acquire(id, h, ttl, now)
			got = realOut(l, false, err)
		case r < 50:
			op = fmt.Sprintf("renew %s %s", h, ttl)
			want = m.renew(h, ttl, now)
			l, err := f.renew(id, h, ttl, now)
			got = realOut(l, false, err)
		case r < 70:
			op = "release " + h
			want = m.release(h, now)
			ok, err := f.release(id, h, now)
			got = realOut(Lease{}, ok, err)
		case r < 73:
			op = fmt.Sprintf("force acquire %s %s", h, ttl)
			want = m.force(h, ttl, now)
			var l Lease
			err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
				var err error
				l, err = Acquire(f.ctx, tx, repo, id, h, ttl, true, now)
				return err
			})
			got = realOut(l, false, err)
		case r < 75:
			op = "merge"
			m.merge(now)
			if err := f.db.Write(f.ctx, func(tx *sql.Tx) error { return EndByMerge(f.ctx, tx, repo, id, "merger", now) }); err != nil {
				t.Fatal(err)
			}
		case r < 80:
			tok := m.token + int64(rng.Intn(3)) - 1
			op = fmt.Sprintf("fence %s %d", h, tok)
			want = m.fence(h, tok, now)
			got = realOut(Lease{}, false, f.fence(id, h, tok, now))
		case r < 85:
			op = "sweep"
			if _, err := SweepExpired(f.ctx, f.db, now); err != nil {
				t.Fatal(err)
			}
		default:
			d := []time.Duration{0, 500 * time.Millisecond, time.Second, 3 * time.Second, 10 * time.Second}[rng.Intn(5)]
			op = "tick " + d.String()
			now = now.Add(d)
		}
		if want != got {
			t.Fatalf("step %d, issue %.4s, %s at %s: got %+v, want %+v", step, id, op, ts(now), got, want)
		}
		if step%50 == 0 {
			checkList(t, f, models, now)
		}
	}
	checkList(t, f, models, now)
	end := now.Add(time.Hour)
	if _, err := SweepExpired(f.ctx, f.db, end); err != nil {
		t.Fatal(err)
	}
	checkExpiredEvents(t, f, models, end)
}

func checkList(t *testing.T, f *fixture, models map[string]*model, now time.Time) {
	t.Helper()
	var want []string
	for id, m := range models {
		if m.live(now) {
			want = append(want, fmt.Sprintf("%s %s %d", id, m.holder, m.token))
		}
	}
	list, err := List(f.ctx, f.db.R(), repo, now)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, l := range list {
		got = append(got, fmt.Sprintf("%s %s %d", l.IssueID, l.Holder, l.Token))
		if i > 0 && l.AcquiredAt.Before(list[i-1].AcquiredAt) {
			t.Fatalf("list not oldest first: %+v", list)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Fatalf("at %s live leases %v, want %v", ts(now), got, want)
	}
	for id, m := range models {
		if m.exists && f.rowToken(id) != m.token {
			t.Fatalf("row token of %.4s = %d, want %d", id, f.rowToken(id), m.token)
		}
	}
}

// checkExpiredEvents: every tenure ended as the model says it did (or, when
// the model saw no end, is open-ended or expired), every tenure recorded as
// expired has exactly one lease.expired event, and no other tenure has any.
func checkExpiredEvents(t *testing.T, f *fixture, models map[string]*model, now time.Time) {
	t.Helper()
	counts := map[string]int{}
	rows, err := f.db.R().Query(`SELECT json_extract(data, '$.issue_id'), json_extract(data, '$.token')
		FROM events WHERE event = 'lease.expired'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var tok int64
		if err := rows.Scan(&id, &tok); err != nil {
			t.Fatal(err)
		}
		counts[fmt.Sprintf("%s/%d", id, tok)]++
	}
	rows.Close()
	rows, err = f.db.R().Query(`SELECT issue_id, token, coalesce(end_reason, ''), expires_at IS NULL FROM tenures`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var expired, total int
	for rows.Next() {
		var id, reason string
		var tok int64
		var open bool
		if err := rows.Scan(&id, &tok, &reason, &open); err != nil {
			t.Fatal(err)
		}
		total++
		k := fmt.Sprintf("%s/%d", id, tok)
		want := 0
		if reason == EndExpired {
			want = 1
			expired++
		}
		if reason == "" && !open {
			t.Errorf("tenure %s with a TTL still open after the final sweep", k)
		}
		if r, ok := models[id].ends[tok]; ok && r != reason {
			t.Errorf("tenure %s ended %q, model says %q", k, reason, r)
		} else if !ok && reason != "" && reason != EndExpired {
			t.Errorf("tenure %s ended %q, model saw no end", k, reason)
		}
		if counts[k] != want {
			t.Errorf("tenure %s (%q): %d lease.expired events, want %d", k, reason, counts[k], want)
		}
	}
	t.Logf("%d tenures, %d expired", total, expired)
}
