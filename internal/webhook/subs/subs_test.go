package subs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"http://127.0.0.1:9000/hook", "http://127.0.0.1:9000/hook", ""},
		{"https://ci.example/collab?token=x", "https://ci.example/collab?token=x", ""},
		{"http://[::1]:8080/", "http://[::1]:8080/", ""},
		{"", "", "empty"},
		{"ftp://example.com/", "", "scheme must be http or https"},
		{"/relative", "", "scheme"},
		{"http:///nohost", "", "no host"},
		{"http://user:pw@example.com/", "", "credentials"},
		{"http://example.com/#frag", "", "fragment"},
		{"http://example.com/a b", "", "space or control"},
		{"http://example.com/\n", "", "space or control"},
		{"http://example.com/" + strings.Repeat("a", MaxURLLen), "", "too long"},
	} {
		got, err := CheckURL(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("CheckURL(%q) = %q, %v", tc.in, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || fault.KindOf(err) != fault.Usage {
			t.Errorf("CheckURL(%q) error %v, want usage error with %q", tc.in, err, tc.err)
		}
	}
}

func TestCheckEvents(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
		bad  bool
	}{
		{nil, nil, false},
		{[]string{"merge.recorded", "issue.filed"}, []string{"issue.filed", "merge.recorded"}, false},
		{[]string{"issue.filed,lease.expired", "issue.filed"}, []string{"issue.filed", "lease.expired"}, false},
		{[]string{"issue.filed, issue.closed"}, []string{"issue.filed", "issue.closed"}, false},
		{[]string{"issue.filed", "nope"}, nil, true},
		{[]string{""}, nil, true},
		{[]string{"issue.filed,"}, nil, true},
	} {
		got, err := CheckEvents(tc.in)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("CheckEvents(%q) = %q, %v", tc.in, got, err)
		}
	}
}

// A subscription starts at the end of the log, and EventsAfter honours its
// filters and bounds.
func TestAddStartsAtEndAndFilters(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := store.FormatTime(time.Now())
	if _, err := db.R().Exec("INSERT INTO repos(name, created_at) VALUES ('demo.git', ?)", now); err != nil {
		t.Fatal(err)
	}
	for _, e := range [][2]string{{"issue.filed", "demo.git"}, {"issue.closed", "demo.git"}, {"issue.filed", "other.git"}, {"issue.filed", "demo.git"}} {
		if _, err := db.R().Exec("INSERT INTO events(event, repo, actor, at, data) VALUES (?, ?, 'ada', ?, '{}')", e[0], e[1], now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Add(ctx, db, "http://x/", "nope", nil, time.Now()); fault.KindOf(err) != fault.NotFound {
		t.Errorf("missing repo: %v", err)
	}
	s, err := Add(ctx, db, "http://x/", "demo", []string{"issue.filed"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.Cursor != 4 || s.Repo != "demo.git" {
		t.Errorf("new subscription %+v", s)
	}
	if _, err := Add(ctx, db, "http://x/", "demo.git", []string{"issue.filed"}, time.Now()); fault.KindOf(err) != fault.Conflict {
		t.Errorf("the same subscription again: %v", err)
	}
	other, err := Add(ctx, db, "http://x/", "demo", []string{"issue.filed", "issue.closed"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := Remove(ctx, db, other.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	evs, err := EventsAfter(ctx, db.R(), s, 0, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, []int64{1, 4}) {
		t.Errorf("EventsAfter = %v, want [1 4]", ids)
	}
	if evs, _ := EventsAfter(ctx, db.R(), s, 1, 3, 10); len(evs) != 0 {
		t.Errorf("bounds ignored: %v", evs)
	}
	if err := Remove(ctx, db, s.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := Remove(ctx, db, s.ID, time.Now()); fault.KindOf(err) != fault.NotFound {
		t.Errorf("second remove: %v", err)
	}
	if l, _ := List(ctx, db.R(), false); len(l) != 0 {
		t.Errorf("list after remove: %+v", l)
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := Add(ctx, db, "http://x/", "", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old, young := now.Add(-40*24*time.Hour), now.Add(-time.Hour)
	var recs []Record
	for i, c := range []struct {
		at    time.Time
		state string
	}{{old, "delivered"}, {old, "failed"}, {old, "pending"}, {young, "delivered"}, {old, "delivered"}} {
		if _, err := db.R().Exec("INSERT INTO events(event, repo, actor, at, data) VALUES ('issue.filed', 'demo.git', 'ada', ?, '{}')", store.FormatTime(c.at)); err != nil {
			t.Fatal(err)
		}
		ev := events.Event{ID: int64(i + 1), At: store.FormatTime(c.at)}
		recs = append(recs, Record{Hook: s.ID, Event: ev, Outcome: Outcome{At: c.at, State: c.state, NextAt: now}})
	}
	if err := Write(ctx, db, recs); err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-30 * 24 * time.Hour)
	if n, err := Prune(ctx, db, cutoff, 2); n != 2 || err != nil {
		t.Fatalf("first prune: %d, %v", n, err)
	}
	if n, err := Prune(ctx, db, cutoff, 2); n != 1 || err != nil {
		t.Fatalf("second prune: %d, %v", n, err)
	}
	ds, err := Deliveries(ctx, db.R(), s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, d := range ds {
		left = append(left, fmt.Sprintf("%d:%s", d.EventID, d.State))
	}
	if !slices.Equal(left, []string{"4:delivered", "3:pending"}) {
		t.Errorf("left %v", left)
	}
	var attempts int
	if err := db.R().QueryRow("SELECT count(*) FROM delivery_attempts").Scan(&attempts); err != nil || attempts != 2 {
		t.Errorf("attempts left %d, %v", attempts, err)
	}
}
