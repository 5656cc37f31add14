package ops

import (
	"github.com/collab-forge/collab/internal/store"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/principals"
)

// pre-receive enforces branch rules for every pusher, even where serve's
// hand-off already covers write access (WriteChecked): a protected main
// refuses a writer's push, a force push and a delete; an admin's
// fast-forward only where the rule says admin; creating a protected
// branch is an admin's.
func TestPreReceiveRules(t *testing.T) {
	f := newForge(t)
	for name, lvl := range map[string]access.Level{"wendy": access.Write, "adam": access.Admin} {
		if err := principals.Add(f.ctx, f.db, name, f.now); err != nil {
			t.Fatal(err)
		}
		if err := principals.SetGrant(f.ctx, f.db, name, "demo.git", lvl); err != nil {
			t.Fatal(err)
		}
	}
	protect := func(branch, direct string) {
		r := branches.Default(branch)
		r.DirectPush = direct
		if err := f.db.Write(f.ctx, func(tx store.Tx) error {
			_, err := branches.Put(f.ctx, tx, "demo.git", r, "adam", f.now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	main := f.git("rev-parse", "HEAD")
	next := f.commit("next")
	f.git("reset", "-q", "--hard", main)
	other := f.commit("other") // not a descendant of next
	try := func(who string, us ...Update) error {
		f.env.Principal, f.env.WriteChecked = who, true
		return f.env.PreReceive(f.ctx, us, nil)
	}
	ff := Update{Old: main, New: next, Ref: "refs/heads/main"}
	rewind := Update{Old: next, New: other, Ref: "refs/heads/main"}
	del := Update{Old: main, New: git.ZeroOID, Ref: "refs/heads/main"}
	create := Update{Old: git.ZeroOID, New: next, Ref: "refs/heads/release"}
	forRef := Update{Old: git.ZeroOID, New: next, Ref: "refs/for/main"}

	// Without rules everything goes.
	for _, u := range []Update{ff, rewind, del, create} {
		if err := try("wendy", u); err != nil {
			t.Fatalf("unprotected %s: %v", u.Ref, err)
		}
	}
	protect("main", branches.DirectNone)
	protect("release", branches.DirectNone) // waits for the branch
	// An operator's aliases: trunk for main, rc for the release branch
	// that does not exist yet (a dangling symref).
	f.git("--git-dir", f.bare, "symbolic-ref", "refs/heads/trunk", "refs/heads/main")
	f.git("--git-dir", f.bare, "symbolic-ref", "refs/heads/rc", "refs/heads/release")
	for _, tc := range []struct {
		name string
		who  string
		u    []Update
		ok   bool
	}{
		{"writer ff", "wendy", []Update{ff}, false},
		{"admin ff, rule none", "adam", []Update{ff}, false},
		{"writer force push", "wendy", []Update{rewind}, false},
		{"admin force push", "adam", []Update{rewind}, false},
		{"writer delete", "wendy", []Update{del}, false},
		{"admin delete", "adam", []Update{del}, false},
		{"local delete", access.Local, []Update{del}, false},
		{"writer creates", "wendy", []Update{create}, false},
		{"admin creates", "adam", []Update{create}, true},
		{"refs/for", "wendy", []Update{forRef}, true},
		{"mixed push refused whole", "wendy", []Update{{Old: git.ZeroOID, New: next, Ref: "refs/heads/topic"}, ff}, false},
		{"another branch", "wendy", []Update{{Old: git.ZeroOID, New: next, Ref: "refs/heads/topic"}}, true},
		{"writer ff through an alias", "wendy", []Update{{Old: main, New: next, Ref: "refs/heads/trunk"}}, false},
		{"admin delete through an alias", "adam", []Update{{Old: main, New: git.ZeroOID, Ref: "refs/heads/trunk"}}, false},
		{"writer creates through a dangling alias", "wendy", []Update{{Old: git.ZeroOID, New: next, Ref: "refs/heads/rc"}}, false},
		{"admin creates through a dangling alias", "adam", []Update{{Old: git.ZeroOID, New: next, Ref: "refs/heads/rc"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := try(tc.who, tc.u...)
			if (err == nil) != tc.ok {
				t.Fatalf("allowed=%v (%v), want %v", err == nil, err, tc.ok)
			}
			if err != nil && (!strings.Contains(fault.Public(err), "patch submit") || strings.Contains(fault.Public(err), "\n")) {
				t.Fatalf("refusal %q: want one line naming patch submit", fault.Public(err))
			}
		})
	}
	protect("main", branches.DirectAdmin)
	if err := try("adam", ff); err != nil {
		t.Fatalf("admin ff, rule admin: %v", err)
	}
	if err := try("wendy", ff); err == nil {
		t.Fatal("writer ff, rule admin: allowed")
	}
	if err := try("adam", rewind); err == nil {
		t.Fatal("admin force push, rule admin: allowed")
	}
}
