package subs

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

func TestWants(t *testing.T) {
	all := Subscription{}
	narrow := Subscription{Repo: "org/demo.git", Events: []string{"issue.filed"}}
	for _, tc := range []struct {
		s          Subscription
		kind, repo string
		want       bool
	}{
		{all, "merge.recorded", "x.git", true},
		{narrow, "issue.filed", "org/demo.git", true},
		{narrow, "issue.closed", "org/demo.git", false},
		{narrow, "issue.filed", "org/other.git", false},
	} {
		if got := tc.s.Wants(tc.kind, tc.repo); got != tc.want {
			t.Errorf("%+v Wants(%s, %s) = %v", tc.s, tc.kind, tc.repo, got)
		}
	}
}

// A subscription starts at the end of the log, and EventsAfter honours its
// filters and bounds.
func TestAddStartsAtEndAndFilters(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "collab.db"))
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
