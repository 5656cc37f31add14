package branches

import (
	"context"
	"database/sql"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/store"
)

func TestValidate(t *testing.T) {
	ok := func(mod func(*Rule)) Rule {
		r := Default("main")
		mod(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		rule Rule
		want string // "" ok, else part of the refusal
	}{
		{"default", Default("main"), ""},
		{"nested branch", Default("release/1.0"), ""},
		{"checks sorted and unique", ok(func(r *Rule) { r.Checks = []string{"lint", "ci/test", "lint"} }), ""},
		{"zero approvals", ok(func(r *Rule) { r.Approvals = 0 }), ""},
		{"every strategy", ok(func(r *Rule) { r.Strategy = Squash; r.DirectPush = DirectAdmin }), ""},
		{"empty branch", Default(""), "bad branch name"},
		{"option branch", Default("-f"), "bad branch name"},
		{"full ref", Default("refs/heads/main"), "bad branch name"},
		{"dotdot", Default("a..b"), "bad branch name"},
		{"lock", Default("main.lock"), "bad branch name"},
		{"space", Default("a b"), "bad branch name"},
		{"control", Default("a\x01b"), "bad branch name"},
		{"negative approvals", ok(func(r *Rule) { r.Approvals = -1 }), "bad approvals"},
		{"too many approvals", ok(func(r *Rule) { r.Approvals = MaxApprovals + 1 }), "bad approvals"},
		{"strategy", ok(func(r *Rule) { r.Strategy = "octopus" }), "bad strategy"},
		{"push is no strategy", ok(func(r *Rule) { r.Strategy = Push }), "bad strategy"},
		{"direct push", ok(func(r *Rule) { r.DirectPush = "all" }), "bad direct-push"},
		{"check name", ok(func(r *Rule) { r.Checks = []string{"CI"} }), "bad check name"},
		{"check name leading dot", ok(func(r *Rule) { r.Checks = []string{".ci"} }), "bad check name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rule
			err := Validate(&r)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || fault.ExitCode(err) != 2 {
				t.Fatalf("got %v (exit %d), want a usage refusal with %q", err, fault.ExitCode(err), tc.want)
			}
		})
	}
	r := ok(func(r *Rule) { r.Checks = []string{"lint", "ci/test", "lint"} })
	if err := Validate(&r); err != nil || strings.Join(r.Checks, ",") != "ci/test,lint" {
		t.Fatalf("checks %v, %v", r.Checks, err)
	}
}

func TestPushRules(t *testing.T) {
	admin := Default("rel")
	admin.DirectPush = DirectAdmin
	got := PushRules([]Rule{Default("main"), admin})
	want := map[string]pushcheck.Rule{"main": {Branch: "main"}, "rel": {Branch: "rel", AdminPush: true}}
	if !maps.Equal(got, want) {
		t.Fatalf("PushRules = %v, want %v", got, want)
	}
}

func TestStore(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write := func(fn func(tx *sql.Tx) error) error { return db.Write(ctx, fn) }
	events := func() []string {
		var out []string
		rows, err := db.R().QueryContext(ctx, "SELECT event FROM events ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var e string
			rows.Scan(&e)
			out = append(out, e)
		}
		return out
	}
	if any, err := Any(ctx, db.R(), "demo.git"); err != nil || any {
		t.Fatalf("Any on a fresh forge: %v %v", any, err)
	}
	r := Default("main")
	r.Checks = []string{"ci"}
	if err := write(func(tx *sql.Tx) error { _, err := Put(ctx, tx, "demo.git", r, "ada", now); return err }); err != nil {
		t.Fatal(err)
	}
	r.Approvals, r.Strategy = 2, Rebase
	if err := write(func(tx *sql.Tx) error { _, err := Put(ctx, tx, "demo.git", r, "bob", now.Add(time.Hour)); return err }); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Get(ctx, db.R(), "demo.git", "main")
	if err != nil || !ok || got.Approvals != 2 || got.Strategy != Rebase || got.CreatedBy != "ada" || got.Checks[0] != "ci" || got.UpdatedAt == got.CreatedAt {
		t.Fatalf("rule after a replace: %+v %v %v", got, ok, err)
	}
	if _, ok, _ := Get(ctx, db.R(), "other.git", "main"); ok {
		t.Fatal("a rule leaked into another repository")
	}
	bad := Default("main")
	bad.Strategy = "nope"
	if err := write(func(tx *sql.Tx) error { _, err := Put(ctx, tx, "demo.git", bad, "ada", now); return err }); fault.ExitCode(err) != 2 {
		t.Fatalf("bad rule: %v", err)
	}
	err = write(func(tx *sql.Tx) error { _, err := Delete(ctx, tx, "demo.git", "dev", "ada", now); return err })
	if fault.ExitCode(err) != 4 {
		t.Fatalf("unprotect of an unprotected branch: %v", err)
	}
	if err := write(func(tx *sql.Tx) error { _, err := Delete(ctx, tx, "demo.git", "main", "ada", now); return err }); err != nil {
		t.Fatal(err)
	}
	list, err := List(ctx, db.R(), "demo.git")
	if err != nil || len(list) != 0 {
		t.Fatalf("rules after unprotect: %v %v", list, err)
	}
	if got := strings.Join(events(), " "); got != "branch.protected branch.protected branch.unprotected" {
		t.Fatalf("events %q", got)
	}
}
