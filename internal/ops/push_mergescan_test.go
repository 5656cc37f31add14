package ops

import (
	"github.com/collab-forge/collab/internal/store"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
)

// moveMain points the bare repository's main at the working clone's HEAD
// as a push by committer `as` would (its reflog names him) and returns
// the update post-receive would get.
func (f *testForge) moveMain(as string) Update {
	f.t.Helper()
	before, _, err := f.env.Git.ResolveRef(f.ctx, "refs/heads/main")
	if err != nil {
		f.t.Fatal(err)
	}
	f.git("as="+as, "push", "-q", "-f", f.bare, "HEAD:refs/heads/main")
	return Update{Old: before, New: f.git("rev-parse", "HEAD"), Ref: "refs/heads/main"}
}

// mergedTopic pushes a one-commit patch for main from branch topic and
// fast-forwards the clone's main to it (not the bare repository's: see
// moveMain); it returns the patch's revision.
func (f *testForge) mergedTopic() string {
	f.t.Helper()
	f.git("checkout", "-q", "-b", "topic")
	rev := f.commit("Topic\n\nPatch: " + pid)
	f.procReceive("refs/for/main", rev)
	f.git("checkout", "-q", "main")
	f.git("merge", "-q", "--ff-only", "topic")
	return rev
}

// The merge scan's kinds: a fast-forward, a merge commit, a rebase and a
// squash each mark the patch merged; a rebase or a squash first pins the
// merged commit as the last revision, with the old tip's merge base.
func TestMergeScanKinds(t *testing.T) {
	for _, tc := range []struct {
		kind     string
		prefetch bool // the walk serve prefetched (Prefetch), as through serve
	}{{"ff", false}, {"merge", false}, {"rebase", false}, {"squash", false}, {"ff", true}, {"merge", true}, {"rebase", true}, {"squash", true}} {
		kind := tc.kind
		name := kind
		if tc.prefetch {
			name += ", prefetched"
		}
		t.Run(name, func(t *testing.T) {
			f := newForge(t)
			f.git("checkout", "-q", "-b", "topic")
			rev := f.commit("Topic\n\nPatch: " + pid)
			f.procReceive("refs/for/main", rev)
			f.git("checkout", "-q", "main")
			if kind != "ff" {
				f.commit("Meanwhile on main")
			}
			switch kind {
			case "ff":
				f.git("merge", "-q", "--ff-only", "topic")
			case "merge":
				f.git("merge", "-q", "--no-ff", "-m", "Merge topic", "topic")
			case "rebase":
				f.git("cherry-pick", "--allow-empty", rev)
			case "squash":
				f.git("merge", "-q", "--squash", "topic")
				f.git("commit", "-q", "--allow-empty", "-m", "Topic, squashed\n\nPatch: "+pid)
			}
			u := f.moveMain("bob")
			f.env.Principal = "bob"
			f.said.Reset()
			if tc.prefetch {
				p := NewPrefetch(f.ctx)
				defer p.Close()
				p.Start(f.ctx, f.env, []Update{u})
				f.env.Prefetched = p
			}
			deferred, err := f.env.PostReceive(f.ctx, []Update{u}, ForegroundBudget)
			if err != nil || len(deferred) != 0 {
				t.Fatalf("PostReceive: %v %v", deferred, err)
			}
			if got, want := f.env.prefetched, map[bool]int{true: 1}[tc.prefetch]; got != want {
				t.Errorf("%d prefetched walks taken, want %d", got, want)
			}
			want := rev
			if kind == "rebase" || kind == "squash" {
				want = u.New
			}
			if v := f.query("SELECT state || '|' || merged_commit || '|' || merged_by FROM patches WHERE id = ?", pid); v != "merged|"+want+"|bob" {
				t.Errorf("patch %q, want merged|%s|bob", v, want)
			}
			if !strings.Contains(f.said.String(), "patch "+pid+" merged into main as "+want) {
				t.Errorf("pusher saw %q", f.said.String())
			}
			revs := f.query("SELECT number || ':' || commit_oid || ':' || pusher FROM revisions WHERE patch_id = ? ORDER BY number", pid)
			if kind == "rebase" || kind == "squash" {
				if revs != "1:"+rev+":alice,2:"+want+":bob" {
					t.Errorf("revisions %q: want the merged commit pinned as revision 2", revs)
				}
				if r := f.refs(); r[collabref.RevRef(pid, want)] != want || r[collabref.HeadRef(pid)] != want {
					t.Errorf("refs %v", r)
				}
				if mb := f.query("SELECT base_commit FROM revisions WHERE patch_id = ? AND number = 2", pid); mb != u.Old {
					t.Errorf("pinned revision's base %s, want the old tip %s", mb, u.Old)
				}
			} else if revs != "1:"+rev+":alice" {
				t.Errorf("revisions %q", revs)
			}
			if v := f.query("SELECT tip FROM branch_scans WHERE branch = 'main'"); v != u.New {
				t.Errorf("scanned tip %q, want %s", v, u.New)
			}
			// Idempotent: scanning again records nothing more.
			if _, err := f.env.PostReceive(f.ctx, []Update{u}, ForegroundBudget); err != nil {
				t.Fatal(err)
			}
			if v := f.query("SELECT count(*) FROM events WHERE event = 'merge.recorded'"); v != "1" {
				t.Errorf("%s merge.recorded events", v)
			}
		})
	}
}

// A merge whose post-receive was killed is recorded by the next push to
// the branch, credited to whoever pushed it as the reflog says; without a
// reflog entry naming a principal, to "unknown".
func TestMergeScanHeals(t *testing.T) {
	for _, tc := range []struct {
		as, want string
	}{{"carol", "carol"}, {"Ada", "unknown"}} {
		t.Run(tc.want, func(t *testing.T) {
			f := newForge(t)
			rev := f.mergedTopic()
			f.moveMain(tc.as) // its post-receive never ran
			f.commit("Later")
			u := f.moveMain("dave")
			f.env.Principal = "dave"
			if _, err := f.env.PostReceive(f.ctx, []Update{u}, ForegroundBudget); err != nil {
				t.Fatal(err)
			}
			if v := f.query("SELECT state || '|' || merged_commit || '|' || merged_by FROM patches WHERE id = ?", pid); v != "merged|"+rev+"|"+tc.want {
				t.Errorf("patch %q, want merged by %s", v, tc.want)
			}
		})
	}
}

// The sweeper makes up a missed scan once the branch has been still for
// its grace period, and restores the refs of a recent revision whose
// proc-receive was killed after its commit.
func TestSweeper(t *testing.T) {
	f := newForge(t)
	f.git("checkout", "-q", "-b", "topic")
	rev := f.commit("Topic\n\nPatch: " + pid)
	f.procReceive("refs/for/main", rev)
	f.git("checkout", "-q", "main")
	f.git("merge", "-q", "--ff-only", "topic")
	f.moveMain("carol")
	if err := f.env.Git.UpdateRefs(f.ctx, []git.RefUpdate{{Ref: collabref.RevRef(pid, rev), New: git.ZeroOID}, {Ref: collabref.HeadRef(pid), New: git.ZeroOID}}); err != nil {
		t.Fatal(err)
	}
	s := &Sweeper{Root: f.env.Root, DB: f.db, Now: func() time.Time { return f.now }, Grace: time.Minute}
	rep, err := s.Once(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Within the grace period the branch is left to its post-receive; the
	// refs are restored at once.
	if v := f.query("SELECT state FROM patches WHERE id = ?", pid); v != "open" || rep.Healed != 0 || rep.Refs != 2 {
		t.Errorf("within grace: patch %s, report %+v", v, rep)
	}
	if r := f.refs(); r[collabref.RevRef(pid, rev)] != rev || r[collabref.HeadRef(pid)] != rev {
		t.Errorf("refs %v", r)
	}
	f.now = f.now.Add(time.Hour)
	if rep, err = s.Once(f.ctx); err != nil {
		t.Fatal(err)
	}
	if v := f.query("SELECT state || '|' || merged_by FROM patches WHERE id = ?", pid); v != "merged|carol" || rep.Healed != 1 || rep.Merged != 1 {
		t.Errorf("after grace: patch %s, report %+v", v, rep)
	}
	if rep, err = s.Once(f.ctx); err != nil || rep != (SweepReport{}) {
		t.Errorf("a third sweep: %+v %v", rep, err)
	}
}

// A push of one branch reads its open patches once for the walk and for
// whether to scan; a push of several asks which branches have any first.
// Both record the merge, and both drop the scan progress of a branch no
// open patch targets any more.
func TestMergeScanOneOrSeveralBranches(t *testing.T) {
	for _, several := range []bool{false, true} {
		t.Run(map[bool]string{false: "one", true: "several"}[several], func(t *testing.T) {
			f := newForge(t)
			rev := f.mergedTopic()
			u := f.moveMain("bob")
			us := []Update{u}
			if several {
				f.git("push", "-q", f.bare, "HEAD:refs/heads/side")
				us = append(us, Update{Old: git.ZeroOID, New: u.New, Ref: "refs/heads/side"})
			}
			if _, err := f.env.PostReceive(f.ctx, us, ForegroundBudget); err != nil {
				t.Fatal(err)
			}
			if v := f.query("SELECT state || '|' || merged_commit FROM patches WHERE id = ?", pid); v != "merged|"+rev {
				t.Errorf("patch %q, want merged|%s", v, rev)
			}
			if v := f.query("SELECT count(*) FROM branch_scans"); v != "1" {
				t.Errorf("%s scan progress rows after the merge, want main's", v)
			}
			// No open patch targets main now: the next push forgets it.
			f.commit("Later")
			us = []Update{f.moveMain("bob")}
			if several {
				us = append(us, Update{Old: u.New, New: u.New, Ref: "refs/heads/side"})
			}
			if _, err := f.env.PostReceive(f.ctx, us, ForegroundBudget); err != nil {
				t.Fatal(err)
			}
			if v := f.query("SELECT count(*) FROM branch_scans"); v != "0" {
				t.Errorf("%s scan progress rows with no open patch, want none", v)
			}
		})
	}
}

// TestReadFollowing: the branches ReadFollowing names are exactly those
// whose move PostReceive has work for (the post-receive gate stays open
// for them unless pre-receive sees the move merges nothing): one an open
// patch targets, with its scan progress and the patch, and one that still
// has scan progress to drop.
func TestReadFollowing(t *testing.T) {
	f := newForge(t)
	following := func(want ...hookenv.Followed) Following {
		t.Helper()
		got, err := ReadFollowing(f.ctx, f.db.R(), "demo.git")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Branches, want) {
			t.Fatalf("ReadFollowing = %+v, want %+v", got.Branches, want)
		}
		return got
	}
	before := following()
	f.mergedTopic() // a patch on main, open
	tip := f.query("SELECT tip FROM branch_scans WHERE branch = 'main'")
	if after := following(hookenv.Followed{Branch: "main", Tip: tip, IDs: []string{pid}}); after.Mark <= before.Mark {
		t.Errorf("Mark %d after a revision, %d before", after.Mark, before.Mark)
	}
	if _, err := f.env.PostReceive(f.ctx, []Update{f.moveMain("bob")}, ForegroundBudget); err != nil {
		t.Fatal(err)
	}
	// Merged: no open patch, but progress that the next push drops.
	if v := f.query("SELECT count(*) FROM patches WHERE state = 'open'"); v != "0" {
		t.Fatalf("%s open patches after the merge", v)
	}
	following(hookenv.Followed{Branch: "main", Tip: f.git("rev-parse", "HEAD")})
	f.commit("Later")
	if _, err := f.env.PostReceive(f.ctx, []Update{f.moveMain("bob")}, ForegroundBudget); err != nil {
		t.Fatal(err)
	}
	following()
}

// TestSkipsRecord: a move pre-receive found unmerged is recorded as
// scanned once the push is done, unless patches changed meanwhile or
// another scan moved the progress first; a branch no open patch targets
// any more has its progress dropped.
func TestSkipsRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		during func(f *testForge)
		merged bool // the patch on main merged before the push
		want   string
	}{
		{"recorded", nil, false, "new"},
		{"a revision meanwhile", func(f *testForge) {
			f.git("checkout", "-q", "-b", "other", "main~1")
			f.procReceive("refs/for/main", f.commit("Other"))
			f.git("checkout", "-q", "main")
		}, false, "old"},
		{"a scan moved it first", func(f *testForge) {
			if err := f.db.Write(f.ctx, func(tx store.Tx) error {
				_, err := tx.ExecContext(f.ctx, "UPDATE branch_scans SET tip = 'elsewhere'")
				return err
			}); err != nil {
				f.t.Fatal(err)
			}
		}, false, "elsewhere"},
		{"no open patch left", nil, true, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newForge(t)
			f.git("checkout", "-q", "-b", "topic")
			f.procReceive("refs/for/main", f.commit("Topic\n\nPatch: "+pid))
			f.git("checkout", "-q", "main")
			if tc.merged {
				f.git("merge", "-q", "--ff-only", "topic")
				if _, err := f.env.PostReceive(f.ctx, []Update{f.moveMain("bob")}, ForegroundBudget); err != nil {
					t.Fatal(err)
				}
			}
			following, err := ReadFollowing(f.ctx, f.db.R(), "demo.git")
			if err != nil {
				t.Fatal(err)
			}
			old := f.query("SELECT tip FROM branch_scans WHERE branch = 'main'")
			f.commit("Unrelated")
			u := f.moveMain("bob")
			if u.Old != old {
				t.Fatalf("main moved from %s, progress at %s", u.Old, old)
			}
			s := NewSkips(following)
			s.Add([]Update{u})
			if tc.during != nil {
				tc.during(f)
			}
			s.Record(f.ctx, f.env)
			got := f.query("SELECT coalesce((SELECT tip FROM branch_scans WHERE branch = 'main'), 'none')")
			want := map[string]string{"new": u.New, "old": u.Old}[tc.want]
			if want == "" {
				want = tc.want
			}
			if got != want {
				t.Errorf("progress %s, want %s (%s)", got, want, tc.want)
			}
		})
	}
}
