package issues

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

func (f *fixture) editLabels(id string, add, remove []string, at time.Time) (Labeled, bool, error) {
	var ev Labeled
	var changed bool
	err := f.write(func(tx *sql.Tx) error {
		var err error
		ev, changed, err = EditLabels(f.ctx, tx, "demo.git", id, add, remove, "bob", at)
		return err
	})
	return ev, changed, err
}

func (f *fixture) setLabels(id string, set []string) (Labeled, bool, error) {
	var ev Labeled
	var changed bool
	err := f.write(func(tx *sql.Tx) error {
		var err error
		ev, changed, err = SetLabels(f.ctx, tx, "demo.git", id, set, "bob", t0)
		return err
	})
	return ev, changed, err
}

func TestEditLabelsWritesTheSetUpdatedAtAndOneEvent(t *testing.T) {
	f := newFixture(t)
	is := f.file("demo.git", "alice", "x", "")
	if is.Labels == nil || len(is.Labels) != 0 {
		t.Fatalf("new issue labels %#v, want []", is.Labels)
	}
	later := t0.Add(time.Hour)
	ev, changed, err := f.editLabels(is.ID, []string{"prio:high", "bug", "bug"}, []string{"nope"}, later)
	if err != nil || !changed {
		t.Fatalf("edit: %v %v", changed, err)
	}
	if !reflect.DeepEqual(ev.Labels, []string{"bug", "prio:high"}) || !reflect.DeepEqual(ev.Added, []string{"bug", "prio:high"}) ||
		len(ev.Removed) != 0 || ev.Removed == nil {
		t.Fatalf("event %+v", ev)
	}
	got, _, _ := Lookup(f.ctx, f.db.R(), "demo.git", is.ID, t0)
	if !reflect.DeepEqual(got.Labels, []string{"bug", "prio:high"}) || got.UpdatedAt == is.UpdatedAt {
		t.Fatalf("stored %v updated %s", got.Labels, got.UpdatedAt)
	}
	// The event carries the issue, its new set and the change.
	var data map[string]any
	var raw string
	if err := f.db.R().QueryRow("SELECT data FROM events WHERE event = 'issue.labeled'").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), &data); err != nil {
		t.Fatal(err)
	}
	if data["id"] != is.ID || fmt.Sprint(data["labels"]) != "[bug prio:high]" || fmt.Sprint(data["added"]) != "[bug prio:high]" {
		t.Fatalf("event data %s", raw)
	}
	// Nothing to change: no write, no event.
	if _, changed, err := f.editLabels(is.ID, []string{"bug"}, []string{"wontfix"}, later); changed || err != nil {
		t.Fatalf("no-op edit: %v %v", changed, err)
	}
	ev, changed, err = f.editLabels(is.ID, []string{"ready"}, []string{"bug"}, later)
	if err != nil || !changed || !reflect.DeepEqual(ev.Labels, []string{"prio:high", "ready"}) ||
		!reflect.DeepEqual(ev.Removed, []string{"bug"}) {
		t.Fatalf("second edit %+v %v", ev, err)
	}
	if f.events("issue.labeled") != 2 {
		t.Fatalf("issue.labeled %d, want 2", f.events("issue.labeled"))
	}
	// The whole set, as PUT sends it.
	ev, changed, err = f.setLabels(is.ID, []string{"area:web"})
	if err != nil || !changed || !reflect.DeepEqual(ev.Labels, []string{"area:web"}) ||
		!reflect.DeepEqual(ev.Removed, []string{"prio:high", "ready"}) {
		t.Fatalf("set %+v %v", ev, err)
	}
	if ev, _, err = f.setLabels(is.ID, nil); err != nil || len(ev.Labels) != 0 {
		t.Fatalf("empty set %+v %v", ev, err)
	}
}

func TestBadLabelsChangeNothing(t *testing.T) {
	f := newFixture(t)
	is := f.file("demo.git", "alice", "x", "")
	var fifty []string
	for i := 0; i < 50; i++ {
		fifty = append(fifty, fmt.Sprintf("l%02d", i))
	}
	if _, _, err := f.setLabels(is.ID, fifty); err != nil {
		t.Fatalf("50 labels: %v", err)
	}
	for i, c := range []struct {
		add, remove []string
	}{
		{[]string{"Bug"}, nil},
		{[]string{"-rf"}, nil},
		{[]string{"a b"}, nil},
		{[]string{""}, nil},
		{[]string{strings.Repeat("x", 51)}, nil},
		{nil, []string{"UPPER"}},
		{[]string{"one-more"}, nil},                // the 51st
		{[]string{"two", "more"}, []string{"l00"}}, // 51 again
		{[]string{"l01"}, []string{"l01"}},         // both
	} {
		if _, _, err := f.editLabels(is.ID, c.add, c.remove, t0); fault.KindOf(err) != fault.Usage {
			t.Errorf("case %d: %v", i, err)
		}
	}
	if _, _, err := f.setLabels(is.ID, append(fifty, "l50")); fault.KindOf(err) != fault.Usage {
		t.Errorf("51 labels set: %v", err)
	}
	// Removing from a full issue, and swapping one for one, still work.
	if _, changed, err := f.editLabels(is.ID, []string{"new"}, []string{"l00"}, t0); err != nil || !changed {
		t.Fatalf("swap on a full issue: %v %v", changed, err)
	}
	if _, _, err := f.editLabels("deadbeefdeadbeef", []string{"x"}, nil, t0); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("missing issue: %v", err)
	}
	if f.events("issue.labeled") != 2 {
		t.Fatalf("issue.labeled %d, want 2", f.events("issue.labeled"))
	}
}

func TestListLabeledNeedsEveryLabelAndFollowsState(t *testing.T) {
	f := newFixture(t)
	var all []Issue
	for i := 0; i < 6; i++ {
		all = append(all, f.file("demo.git", "alice", "issue", ""))
	}
	other := f.file("other.git", "alice", "elsewhere", "")
	lab := func(i int, ls ...string) {
		if _, _, err := f.editLabels(all[i].ID, ls, nil, t0); err != nil {
			t.Fatal(err)
		}
	}
	lab(0, "a", "b")
	lab(1, "a")
	lab(2, "b")
	lab(3, "a", "b", "c")
	lab(4, "a", "b")
	if err := f.write(func(tx *sql.Tx) error {
		_, _, err := EditLabels(f.ctx, tx, "other.git", other.ID, []string{"a", "b"}, nil, "bob", t0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := setStateW(f, all[4].ID, Closed); err != nil {
		t.Fatal(err)
	}
	ids := func(state string, ls []string, limit int, after string) []string {
		t.Helper()
		list, err := ListLabeled(f.ctx, f.db.R(), "demo.git", state, ls, limit, after, t0)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, is := range list {
			out = append(out, is.ID)
		}
		return out
	}
	for i, c := range []struct {
		state string
		ls    []string
		limit int
		after string
		want  []string
	}{
		{"", []string{"a", "b"}, 0, "", []string{all[3].ID, all[0].ID}},
		{"all", []string{"b", "a"}, 0, "", []string{all[4].ID, all[3].ID, all[0].ID}},
		{"closed", []string{"a", "b"}, 0, "", []string{all[4].ID}},
		{"open", []string{"a"}, 2, "", []string{all[3].ID, all[1].ID}},
		{"open", []string{"a"}, 2, all[1].ID[:6], []string{all[0].ID}},
		{"open", []string{"c", "a", "b"}, 0, "", []string{all[3].ID}},
		{"open", []string{"zzz"}, 0, "", []string{}},
		{"open", nil, 0, "", []string{all[5].ID, all[3].ID, all[2].ID, all[1].ID, all[0].ID}},
	} {
		if got := ids(c.state, c.ls, c.limit, c.after); !reflect.DeepEqual(got, c.want) {
			t.Errorf("case %d (%s %v): %v, want %v", i, c.state, c.ls, got, c.want)
		}
	}
	// Reopened, issue 4 is an open one again.
	if _, _, err := setStateW(f, all[4].ID, Open); err != nil {
		t.Fatal(err)
	}
	if got := ids("open", []string{"a", "b"}, 0, ""); len(got) != 3 || got[0] != all[4].ID {
		t.Fatalf("after reopen: %v", got)
	}
	list, _ := ListLabeled(f.ctx, f.db.R(), "demo.git", "open", []string{"c"}, 0, "", t0)
	if len(list) != 1 || !reflect.DeepEqual(list[0].Labels, []string{"a", "b", "c"}) {
		t.Fatalf("labels in the list: %+v", list)
	}
	if _, err := ListLabeled(f.ctx, f.db.R(), "demo.git", "open", []string{"Nope"}, 0, "", t0); fault.KindOf(err) != fault.Usage {
		t.Fatalf("bad label filter: %v", err)
	}
}
