package ops

import (
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
)

const pid = "1111111111111111"

func okReport(ref, refname, old, new string, forced bool) []string {
	r := []string{"ok " + ref, "option refname " + refname, "option old-oid " + old, "option new-oid " + new}
	if forced {
		r = append(r, "option forced-update")
	}
	return r
}

func same(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

// ProcReceive driven over pkt-lines: a new patch, a new revision, the same
// tip twice, a refused trailer and a link fenced by another's lease.
func TestProcReceive(t *testing.T) {
	f := newForge(t)
	base := f.git("rev-parse", "HEAD")
	c1 := f.commit("One\n\nPatch: " + pid)
	got := f.procReceive("refs/for/main", c1, "topic=t1")
	if want := okReport("refs/for/main", collabref.HeadRef(pid), git.ZeroOID, c1, false); !same(got, want) {
		t.Fatalf("new patch: %q, want %q", got, want)
	}
	if s := f.said.String(); !strings.Contains(s, "patch "+pid+" revision 1") {
		t.Errorf("pusher saw %q", s)
	}
	if v := f.query("SELECT title || '|' || topic || '|' || author FROM patches WHERE id = ?", pid); v != "One|t1|alice" {
		t.Errorf("patch row %q", v)
	}
	if v := f.query("SELECT number || '|' || commit_oid || '|' || base_commit FROM revisions WHERE patch_id = ?", pid); v != "1|"+c1+"|"+base {
		t.Errorf("revision rows %q", v)
	}
	if r := f.refs(); r[collabref.RevRef(pid, c1)] != c1 || r[collabref.HeadRef(pid)] != c1 {
		t.Errorf("refs %v", r)
	}
	if v := f.query("SELECT tip FROM branch_scans WHERE branch = 'main'"); v != base {
		t.Errorf("branch_scans %q, want the merge base %s", v, base)
	}

	// An amend: revision 2, a forced update, the range-diff line.
	f.git("commit", "-q", "--amend", "--allow-empty", "-m", "One, again\n\nPatch: "+pid)
	c2 := f.git("rev-parse", "HEAD")
	f.git("push", "-q", "-f", f.bare, "HEAD:refs/test/c2")
	got = f.procReceive("refs/for/main", c2)
	if want := okReport("refs/for/main", collabref.HeadRef(pid), c1, c2, true); !same(got, want) {
		t.Fatalf("new revision: %q, want %q", got, want)
	}
	if !strings.Contains(f.said.String(), "git range-diff "+base+".."+c1+" "+base+".."+c2) {
		t.Errorf("pusher saw %q", f.said.String())
	}
	// A commit on top: revision 3, not forced.
	c3 := f.commit("Three\n\nPatch: " + pid)
	if got := f.procReceive("refs/for/main", c3); !same(got, okReport("refs/for/main", collabref.HeadRef(pid), c2, c3, false)) {
		t.Fatalf("fast-forward revision: %q", got)
	}

	// The same tip again: ok, nothing new, reported on the revision ref.
	got = f.procReceive("refs/for/main", c3)
	if want := okReport("refs/for/main", collabref.RevRef(pid, c3), c3, c3, false); !same(got, want) {
		t.Fatalf("same tip twice: %q, want %q", got, want)
	}
	if !strings.Contains(f.said.String(), "unchanged") {
		t.Errorf("pusher saw %q", f.said.String())
	}
	if v := f.query("SELECT count(*) FROM revisions WHERE patch_id = ?", pid); v != "3" {
		t.Errorf("%s revisions after the same tip twice", v)
	}

	// Two Patch: trailers: refused, nothing recorded.
	bad := f.commit("Bad\n\nPatch: 2222222222222222\nPatch: 3333333333333333")
	got = f.procReceive("refs/for/main", bad)
	if len(got) != 1 || !strings.HasPrefix(got[0], "ng refs/for/main commit ") || !strings.Contains(got[0], "has 2 Patch: trailers") {
		t.Errorf("two trailers: %q", got)
	}
	if v := f.query("SELECT count(*) FROM patches"); v != "1" {
		t.Errorf("%s patches after a refusal", v)
	}

	// An issue leased by bob: alice may not link it; nothing is recorded.
	var issue string
	err := f.db.Write(f.ctx, func(tx store.Tx) error {
		is, err := issues.New(f.ctx, tx, "demo.git", "bob", "A bug", "", f.now)
		if err != nil {
			return err
		}
		issue = is.ID
		_, err = leases.Acquire(f.ctx, tx, "demo.git", is.ID, "bob", time.Hour, false, f.now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f.git("checkout", "-q", "-b", "p2", base)
	fenced := f.commit("Fix it\n\nPatch: 4444444444444444\nFixes: " + issue)
	got = f.procReceive("refs/for/main", fenced)
	if len(got) != 1 || !strings.Contains(got[0], "issue "+issue+" is leased by bob; only the holder or a repository admin may link it") {
		t.Errorf("fenced link: %q", got)
	}
	if v := f.query("SELECT count(*) FROM patches WHERE id = '4444444444444444'"); v != "0" {
		t.Errorf("fenced push recorded a patch")
	}
	// A stale lease token is refused too.
	got = f.procReceive("refs/for/main", f.commit("Other\n\nPatch: 5555555555555555"), "lease="+issue+":99")
	if len(got) != 1 || !strings.HasPrefix(got[0], "ng ") {
		t.Errorf("stale token: %q", got)
	}
	// No base branch, no history in common, no new changes.
	if got := f.procReceive("refs/for/nope", c3); len(got) != 1 || !strings.Contains(got[0], "unknown base branch nope") {
		t.Errorf("unknown base: %q", got)
	}
	if got := f.procReceive("refs/for/main", base); len(got) != 1 || !strings.Contains(got[0], "no new changes") {
		t.Errorf("no new changes: %q", got)
	}
	if got := f.procReceive("refs/for/main~1", c3); len(got) != 1 || !strings.Contains(got[0], "bad target") {
		t.Errorf("a revision expression as target: %q", got)
	}
}

// A retry is never blocked by what a killed or refused push left: a
// leftover ref naming the same commit is adopted, one naming another
// commit (and a head pointing there) is overwritten, and a row whose refs
// were never written gets them back from a retry of its commit, else from
// the sweep (RestoreRefs).
func TestRetries(t *testing.T) {
	f := newForge(t)
	c1 := f.commit("One\n\nPatch: " + pid)
	f.updateRef(collabref.RevRef(pid, c1), c1)
	f.updateRef(collabref.HeadRef(pid), c1)
	if got := f.procReceive("refs/for/main", c1); len(got) == 0 || got[0] != "ok refs/for/main" {
		t.Fatalf("leftover for the same commit: %q", got)
	}
	if v := f.query("SELECT number FROM revisions WHERE patch_id = ?", pid); v != "1" {
		t.Errorf("revisions %q", v)
	}

	// A leftover for another commit (an amend that was killed) never blocks.
	f.git("commit", "-q", "--amend", "--allow-empty", "-m", "One, killed\n\nPatch: "+pid)
	killed := f.git("rev-parse", "HEAD")
	f.git("push", "-q", "-f", f.bare, "HEAD:refs/test/killed")
	f.updateRef(collabref.RevRef(pid, killed), killed)
	f.updateRef(collabref.HeadRef(pid), killed)
	f.git("commit", "-q", "--amend", "--allow-empty", "-m", "One, again\n\nPatch: "+pid)
	c2 := f.git("rev-parse", "HEAD")
	f.git("push", "-q", "-f", f.bare, "HEAD:refs/test/c2")
	if got := f.procReceive("refs/for/main", c2); len(got) == 0 || got[0] != "ok refs/for/main" {
		t.Fatalf("leftover for another commit: %q", got)
	}
	if r := f.refs(); r[collabref.HeadRef(pid)] != c2 || r[collabref.RevRef(pid, c2)] != c2 {
		t.Errorf("refs after the retry: %v", r)
	}
	if v := f.query("SELECT number || ':' || commit_oid FROM revisions WHERE patch_id = ? ORDER BY number", pid); v != "1:"+c1+",2:"+c2 {
		t.Errorf("revisions follow push order: %q", v)
	}

	// A kill between the commit and the refs: the row is there, the refs
	// are not. Pushing the same commit again finishes the job.
	if err := f.env.Git.UpdateRefs(f.ctx, []git.RefUpdate{{Ref: collabref.RevRef(pid, c2), New: git.ZeroOID}, {Ref: collabref.HeadRef(pid), New: c1}}); err != nil {
		t.Fatal(err)
	}
	if got := f.procReceive("refs/for/main", c2); len(got) == 0 || got[0] != "ok refs/for/main" {
		t.Fatalf("retry of a recorded revision: %q", got)
	}
	if r := f.refs(); r[collabref.HeadRef(pid)] != c2 || r[collabref.RevRef(pid, c2)] != c2 || r[collabref.RevRef(pid, c1)] != c1 {
		t.Errorf("refs after the retry: %v", r)
	}
	// An unchanged push still touches the patch, as a new revision does.
	if v := f.query("SELECT updated_at FROM patches WHERE id = ?", pid); v != store.FormatTime(f.now) {
		t.Errorf("updated_at after an unchanged push = %s, want %s", v, store.FormatTime(f.now))
	}
	// The next revision writes its own ref and the head, not every
	// revision's (git locks each ref it is handed): an earlier revision's
	// lost ref is the sweep's to restore.
	if err := f.env.Git.UpdateRefs(f.ctx, []git.RefUpdate{{Ref: collabref.RevRef(pid, c1), New: git.ZeroOID}}); err != nil {
		t.Fatal(err)
	}
	c3 := f.commit("Three\n\nPatch: " + pid)
	f.procReceive("refs/for/main", c3)
	if r := f.refs(); r[collabref.RevRef(pid, c3)] != c3 || r[collabref.HeadRef(pid)] != c3 || r[collabref.RevRef(pid, c1)] != "" {
		t.Errorf("refs after the next revision: %v", r)
	}
	if v := f.query("SELECT updated_at FROM patches WHERE id = ?", pid); v != store.FormatTime(f.now) {
		t.Errorf("updated_at after a new revision = %s, want %s", v, store.FormatTime(f.now))
	}
	if n, err := RestoreRefs(f.ctx, f.db.R(), f.env.Git, "demo.git", []string{pid}); err != nil || n != 1 {
		t.Errorf("RestoreRefs = %d, %v; want the one lost ref", n, err)
	}
	if r := f.refs(); r[collabref.RevRef(pid, c1)] != c1 {
		t.Errorf("refs after the sweep: %v", r)
	}
}
