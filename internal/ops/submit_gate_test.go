package ops_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/flock"
	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/fsck"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/submit"
)

// gateForge is a forge with demo.git (hooks that do nothing), principals
// ada (author, write), bob (write), rob (a CI bot, write), and a working
// clone.
type gateForge struct {
	t    *testing.T
	ctx  context.Context
	db   *store.DB
	gate *submit.Gate
	bare git.Repo
	work string
	now  time.Time
	mu   sync.Mutex
}

func newGateForge(t *testing.T) *gateForge {
	t.Helper()
	ctx, root, db := forgetest.New(t)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if _, err := repos.Create(ctx, root, db, "demo", false, "", "/bin/true", now); err != nil {
		t.Fatal(err)
	}
	f := &gateForge{t: t, ctx: ctx, db: db, bare: git.Open(filepath.Join(root.ReposDir(), "demo.git")), work: t.TempDir(), now: now}
	f.gate = &submit.Gate{DB: db, Root: root,
		PatchURL: func(repo, id string) string { return "https://forge.example/demo/-/patches/" + id },
		Record:   (&ops.Service{DB: db, Root: root, Now: f.clock}).RecordSubmitted}
	for _, p := range []string{"ada", "bob", "rob"} {
		if err := principals.Add(ctx, db, p, now); err != nil {
			t.Fatal(err)
		}
		if err := principals.SetGrant(ctx, db, p, "demo.git", access.Write); err != nil {
			t.Fatal(err)
		}
	}
	f.git("init", "-q", "-b", "main")
	f.write("a.txt", "one\n")
	f.git("add", "-A")
	f.git("commit", "-q", "-m", "init")
	f.git("push", "-q", f.bare.Dir, "HEAD:refs/heads/main")
	return f
}

func (f *gateForge) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(time.Second)
	return f.now
}

func (f *gateForge) git(args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = f.work
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+f.work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		f.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (f *gateForge) write(name, content string) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.work, name), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// patch makes a one-commit patch off main writing file, records it as
// pushed by ada, and returns its id.
func (f *gateForge) patch(n int, file string) string {
	f.t.Helper()
	id := fmt.Sprintf("%040x", n)
	f.git("checkout", "-q", "-B", "p"+id[:6], "main")
	base := f.git("rev-parse", "HEAD")
	f.write(file, fmt.Sprintf("patch %d\n", n))
	f.git("add", "-A")
	f.git("commit", "-q", "-m", fmt.Sprintf("Patch %d\n\nPatch: %s", n, id))
	c := f.git("rev-parse", "HEAD")
	f.git("push", "-q", f.bare.Dir, "HEAD:refs/test/"+id)
	f.git("checkout", "-q", "main")
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		if _, err := patches.Create(f.ctx, tx, patches.New{Repo: "demo.git", ID: id, Title: fmt.Sprintf("Patch %d", n), Author: "ada", Base: "main"}, f.clock()); err != nil {
			return err
		}
		if _, _, err := patches.AddRevision(f.ctx, tx, "demo.git", id, c, base, "ada", f.clock()); err != nil {
			return err
		}
		_, err := tx.ExecContext(f.ctx, "INSERT INTO branch_scans(repo, branch, tip, scanned_at) VALUES ('demo.git', 'main', ?, '') ON CONFLICT DO NOTHING", base)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *gateForge) do(fn func(tx *sql.Tx) error) {
	f.t.Helper()
	if err := f.db.Write(f.ctx, fn); err != nil {
		f.t.Fatal(err)
	}
}

func (f *gateForge) approve(id, who, verdict string) {
	f.t.Helper()
	// Written as review.Post writes it, without its lease and anchor rules.
	f.do(func(tx *sql.Tx) error {
		_, err := tx.ExecContext(f.ctx, `INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, created_at)
			VALUES ('demo.git', ?, ?, 1, ?, ?, 'ok', ?)`, id, fmt.Sprintf("%040x", f.clock().UnixNano()), who, verdict, store.FormatTime(f.clock()))
		return err
	})
}

func (f *gateForge) check(id, name, state, by string) {
	f.do(func(tx *sql.Tx) error {
		_, err := checks.Post(f.ctx, tx, "demo.git", id, checks.Check{Revision: 1, Name: name, State: state, By: by}, f.clock())
		return err
	})
}

func (f *gateForge) merge(id string) string {
	f.t.Helper()
	p, err := patches.Get(f.ctx, f.db.R(), "demo.git", id)
	if err != nil {
		f.t.Fatal(err)
	}
	if p.Merge == nil {
		return string(p.State)
	}
	return fmt.Sprintf("%s %s by %s %s submitted=%v", p.State, p.Merge.Branch, p.Merge.By, p.Merge.Strategy, p.Merge.Submitted)
}

func (f *gateForge) main() string {
	f.t.Helper()
	oid, _, err := f.bare.ResolveRef(f.ctx, "refs/heads/main")
	if err != nil {
		f.t.Fatal(err)
	}
	return oid
}

func TestSubmitGate(t *testing.T) {
	f := newGateForge(t)
	rule := branches.Default("main")
	rule.Checks = []string{"ci"}
	f.do(func(tx *sql.Tx) error { _, err := branches.Put(f.ctx, tx, "demo.git", rule, "adm", f.now); return err })
	id := f.patch(1, "b.txt")
	before := f.main()

	_, err := f.gate.Submit(f.ctx, "demo.git", id, "", "bob")
	fe := fault.As(err)
	if fe.Kind != fault.Conflict || !strings.Contains(fe.Msg, "approvals (0 of 1") || !strings.Contains(fe.Msg, "check:ci (not reported") {
		t.Fatalf("refusal %v", err)
	}
	reqs, _ := fe.Fields["requirements"].([]submit.Requirement)
	if len(reqs) != 6 || reqs[5].Name != submit.ReqMergeable || !reqs[5].OK {
		t.Fatalf("requirements %+v", reqs)
	}
	if _, err := f.gate.Submit(f.ctx, "demo.git", id, "octopus", "bob"); fault.ExitCode(err) != 2 {
		t.Fatalf("unknown strategy: %v", err)
	}
	f.approve(id, "ada", "approve") // the author's does not count
	f.check(id, "ci", checks.Success, "ada")
	if _, err := f.gate.Submit(f.ctx, "demo.git", id, "", "bob"); !strings.Contains(fault.Public(err), "not counted: ada (the author)") {
		t.Fatalf("author's approval: %v", err)
	}
	f.approve(id, "bob", "request-changes")
	f.check(id, "ci", checks.Success, "rob")
	if _, err := f.gate.Submit(f.ctx, "demo.git", id, "", "bob"); !strings.Contains(fault.Public(err), "changes requested by bob") {
		t.Fatalf("request-changes: %v", err)
	}
	if f.main() != before || f.merge(id) != "open" {
		t.Fatal("a refused submit moved the branch or recorded something")
	}
	f.approve(id, "bob", "approve")
	st, err := f.gate.Status(f.ctx, f.db.R(), mustGet(t, f, id), "")
	if err != nil || !st.Submittable || strings.Join(st.Approvers, ",") != "bob" {
		t.Fatalf("status %+v %v", st, err)
	}
	res, err := f.gate.Submit(f.ctx, "demo.git", id, "", "rob")
	if err != nil {
		t.Fatal(err)
	}
	if f.main() != res.Commit || f.merge(id) != "merged main by rob merge submitted=true" {
		t.Fatalf("after submit: main %s (result %s), %s", f.main(), res.Commit, f.merge(id))
	}
	msg := f.git("--git-dir="+f.bare.Dir, "log", "-1", "--format=%B", res.Commit)
	if !strings.Contains(msg, "Patch: "+id+"\nReviewed-on: https://forge.example/demo/-/patches/"+id+"\nReviewed-by: bob") {
		t.Fatalf("merge message %q", msg)
	}
	// rob's retry is told his merge; anyone else's submit is refused.
	if again, err := f.gate.Submit(f.ctx, "demo.git", id, "", "rob"); err != nil || !again.Already || f.main() != res.Commit {
		t.Fatalf("rob's retried submit: %+v, %v; main %s", again, err, f.main())
	}
	if _, err := f.gate.Submit(f.ctx, "demo.git", id, "", "bob"); !strings.Contains(fault.Public(err), "open (the patch is merged)") {
		t.Fatalf("submit of a merged patch: %v", err)
	}
	var ev string
	f.db.R().QueryRowContext(f.ctx, "SELECT data FROM events WHERE event = 'merge.recorded'").Scan(&ev)
	if !strings.Contains(ev, `"strategy":"merge"`) || !strings.Contains(ev, `"submitted":true`) || !strings.Contains(ev, `"by":"rob"`) {
		t.Fatalf("merge.recorded %s", ev)
	}
}

func mustGet(t *testing.T, f *gateForge, id string) patches.Patch {
	p, err := patches.Get(f.ctx, f.db.R(), "demo.git", id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Each strategy lands, on an unprotected branch that moved since the
// patch's base, and is recorded as the merge scan records it.
func TestSubmitStrategies(t *testing.T) {
	for _, s := range branches.Strategies {
		t.Run(s, func(t *testing.T) {
			f := newGateForge(t)
			id := f.patch(1, "b.txt")
			other := f.patch(2, "c.txt")
			if _, err := f.gate.Submit(f.ctx, "demo.git", other, branches.Merge, "bob"); err != nil {
				t.Fatal(err)
			}
			res, err := f.gate.Submit(f.ctx, "demo.git", id, s, "bob")
			if s == branches.FFOnly {
				if !strings.Contains(fault.Public(err), "needs rebase") {
					t.Fatalf("ff-only onto a moved branch: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "merged main by bob " + s + " submitted=true"; f.merge(id) != want {
				t.Fatalf("%s, want %s", f.merge(id), want)
			}
			p := mustGet(t, f, id)
			switch s {
			case branches.Rebase, branches.Squash:
				if len(p.Revisions) != 2 || p.Head().Commit != res.Commit || p.Merge.Commit != res.Commit {
					t.Fatalf("the result is not pinned as the last revision: %+v %+v", p.Revisions, p.Merge)
				}
			case branches.Merge:
				if len(p.Revisions) != 1 || p.Merge.Commit != p.Revisions[0].Commit {
					t.Fatalf("merge record %+v", p.Merge)
				}
			}
		})
	}
}

// Submits racing on one branch each land on top of the other or are
// refused with a conflict; none is lost, and the database agrees with the
// branch.
func TestSubmitRace(t *testing.T) {
	f := newGateForge(t)
	var ids []string
	for i := 1; i <= 6; i++ {
		ids = append(ids, f.patch(i, fmt.Sprintf("f%d.txt", i)))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.gate.Submit(f.ctx, "demo.git", id, branches.Merge, "bob")
		}()
	}
	wg.Wait()
	tip := f.main()
	for i, id := range ids {
		p := mustGet(t, f, id)
		onMain, err := f.bare.IsAncestor(f.ctx, p.Revisions[0].Commit, tip)
		if err != nil {
			t.Fatal(err)
		}
		merged := strings.HasPrefix(f.merge(id), "merged main by bob merge")
		switch {
		case errs[i] == nil && (!onMain || !merged):
			t.Errorf("patch %d: submit said done, on main %v, %s", i+1, onMain, f.merge(id))
		case errs[i] != nil && (fault.ExitCode(errs[i]) != 3 || onMain || merged):
			t.Errorf("patch %d: %v, on main %v, %s", i+1, errs[i], onMain, f.merge(id))
		}
	}
}

// A submit that dies between moving the branch and recording the merge is
// repaired by the sweep, by fsck or by the next push to the branch,
// credited to the submitter as a submit.
func TestSubmitCrashRepaired(t *testing.T) {
	for _, repair := range []string{"sweep", "fsck", "next push"} {
		t.Run(repair, func(t *testing.T) {
			f := newGateForge(t)
			id := f.patch(1, "b.txt")
			ctx, cancel := context.WithCancel(f.ctx)
			f.gate.AfterMove = cancel
			if _, err := f.gate.Submit(ctx, "demo.git", id, branches.Squash, "bob"); err == nil {
				t.Fatal("the submit went on after its context ended")
			}
			if f.merge(id) != "open" {
				t.Fatalf("recorded anyway: %s", f.merge(id))
			}
			squashed := f.main()
			switch repair {
			case "sweep":
				sw := &ops.Sweeper{Root: f.gate.Root, DB: f.db, Now: func() time.Time { return time.Now().Add(time.Hour) }}
				if rep, err := sw.Once(f.ctx); err != nil || rep.Healed != 1 {
					t.Fatalf("sweep: %+v %v", rep, err)
				}
			case "fsck":
				c := &fsck.Checker{Root: f.gate.Root, DB: f.db, Binary: "/bin/true", Out: io.Discard, Now: f.clock}
				if err := c.Run(f.ctx, "demo.git"); err != nil {
					t.Fatal(err)
				}
			case "next push":
				f.git("fetch", "-q", f.bare.Dir, "main")
				f.git("checkout", "-q", "-B", "main", "FETCH_HEAD")
				f.write("later.txt", "later\n")
				f.git("add", "-A")
				f.git("commit", "-q", "-m", "later")
				next := f.git("rev-parse", "HEAD")
				f.git("push", "-q", f.bare.Dir, "HEAD:refs/test/later")
				mover := f.bare.With(hookenv.Committer("dave")...)
				if err := mover.CompareAndSwap(f.ctx, "refs/heads/main", next, squashed, "push"); err != nil {
					t.Fatal(err)
				}
				e := &ops.Push{Root: f.gate.Root, DB: f.db, Repo: "demo.git", Git: f.bare, Principal: "dave", Stderr: io.Discard, Now: f.clock}
				if _, err := e.PostReceive(f.ctx, []ops.Update{{Old: squashed, New: next, Ref: "refs/heads/main"}}, ops.ForegroundBudget); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.merge(id); got != "merged main by bob squash submitted=true" {
				t.Fatalf("after the %s: %s", repair, got)
			}
			if p := mustGet(t, f, id); p.Merge.Commit != squashed || p.Head().Commit != squashed {
				t.Fatalf("merge %+v, revisions %+v", p.Merge, p.Revisions)
			}
		})
	}
}

// A patch whose base branch is an operator's alias (a symbolic ref to
// the protected main) is not mergeable: moving the alias would move main
// without main's rule.
func TestSubmitIntoAlias(t *testing.T) {
	f := newGateForge(t)
	f.do(func(tx *sql.Tx) error {
		_, err := branches.Put(f.ctx, tx, "demo.git", branches.Default("main"), "adm", f.now)
		return err
	})
	f.git("--git-dir="+f.bare.Dir, "symbolic-ref", "refs/heads/trunk", "refs/heads/main")
	id := f.patch(1, "b.txt")
	f.do(func(tx *sql.Tx) error {
		_, err := tx.ExecContext(f.ctx, "UPDATE patches SET base = 'trunk' WHERE id = ?", id)
		return err
	})
	before := f.main()
	_, err := f.gate.Submit(f.ctx, "demo.git", id, "", "bob")
	if fault.KindOf(err) != fault.Conflict || !strings.Contains(fault.Public(err), "mergeable (branch trunk is an alias of main: push the patch to refs/for/main)") {
		t.Fatalf("submit into an alias: %v", err)
	}
	st, err := f.gate.Status(f.ctx, f.db.R(), mustGet(t, f, id), "")
	if err != nil || st.Submittable {
		t.Fatalf("status of a patch into an alias: %+v %v", st, err)
	}
	if f.main() != before || f.merge(id) != "open" {
		t.Fatal("a submit into an alias moved main or recorded something")
	}
}

// A submit whose branch moved between its build and its compare-and-swap
// builds again on the new tip and lands on top of it; one that loses
// every time gives up with a conflict and moves nothing of its own. No
// push records a revision while the submit moves the branch (it holds the
// refs lock).
func TestSubmitRetriesWhenTheBranchMoved(t *testing.T) {
	f := newGateForge(t)
	id := f.patch(1, "b.txt")
	// pushed moves main by a commit of someone else's, as a push would.
	pushed := func() string {
		f.git("fetch", "-q", f.bare.Dir, "main")
		f.git("checkout", "-q", "-B", "main", "FETCH_HEAD")
		f.git("commit", "-q", "--allow-empty", "-m", "someone else")
		next := f.git("rev-parse", "HEAD")
		f.git("push", "-q", f.bare.Dir, "HEAD:refs/test/else")
		if err := f.bare.CompareAndSwap(f.ctx, "refs/heads/main", next, f.main(), "push"); err != nil {
			t.Errorf("move main: %v", err)
		}
		return next
	}
	lockHeld := func() {
		if unlock, free, err := flock.TryLock(filepath.Join(f.bare.Dir, patches.LockName), 0o640); err != nil || free {
			if free {
				unlock()
			}
			t.Errorf("the refs lock is not held at the compare-and-swap (%v)", err)
		}
	}
	var moved string
	f.gate.BeforeMove = func(attempt int) {
		lockHeld()
		if attempt == 1 {
			moved = pushed()
		}
	}
	res, err := f.gate.Submit(f.ctx, "demo.git", id, branches.Rebase, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 2 || moved == "" {
		t.Fatalf("attempts %d, moved %q", res.Attempts, moved)
	}
	if parent := f.git("--git-dir="+f.bare.Dir, "rev-parse", res.Commit+"^"); parent != moved || f.main() != res.Commit {
		t.Fatalf("rebased onto %s, want %s; main %s", parent, moved, f.main())
	}
	if f.merge(id) != "merged main by bob rebase submitted=true" {
		t.Fatalf("record: %s", f.merge(id))
	}

	// Losing every attempt: exit 3, and main is where the others put it.
	f.git("checkout", "-q", "main")
	third := f.patch(3, "d.txt")
	var last string
	f.gate.BeforeMove = func(int) { lockHeld(); last = pushed() }
	if _, err := f.gate.Submit(f.ctx, "demo.git", third, branches.Merge, "bob"); fault.ExitCode(err) != 3 || !strings.Contains(fault.Public(err), "kept moving") {
		t.Fatalf("a submit losing every race: %v", err)
	}
	if f.main() != last || f.merge(third) != "open" {
		t.Fatalf("main %s (want %s), %s", f.main(), last, f.merge(third))
	}
}

// A list page's statuses, read once for the page, are what each patch's
// own facts give: rules (one branch protected, one not), approvals by
// writers, a reader and the author, checks on the head revision or none.
func TestListStatusesAsEachAlone(t *testing.T) {
	f := newGateForge(t)
	if err := principals.Add(f.ctx, f.db, "rita", f.now); err != nil {
		t.Fatal(err)
	}
	if err := principals.SetGrant(f.ctx, f.db, "rita", "demo.git", access.Read); err != nil {
		t.Fatal(err)
	}
	rule := branches.Default("main")
	rule.Checks = []string{"ci"}
	f.do(func(tx *sql.Tx) error { _, err := branches.Put(f.ctx, tx, "demo.git", rule, "adm", f.now); return err })
	a, b, c := f.patch(1, "b.txt"), f.patch(2, "c.txt"), f.patch(3, "d.txt")
	f.approve(a, "bob", "approve")
	f.check(a, "ci", checks.Success, "rob")
	f.approve(b, "rita", "approve")
	f.approve(b, "ada", "approve")
	f.check(b, "ci", checks.Failure, "rob")
	f.approve(c, "bob", "request-changes")
	tips, err := f.bare.Refs(f.ctx, "refs/heads/")
	if err != nil {
		t.Fatal(err)
	}
	var ps []patches.Patch
	for _, id := range []string{a, b, c} {
		ps = append(ps, mustGet(t, f, id))
	}
	byPatch, err := checks.OfPatches(f.ctx, f.db.R(), "demo.git", []string{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	if len(byPatch[a][1]) != 1 || len(byPatch[b][1]) != 1 || len(byPatch[c]) != 0 {
		t.Fatalf("checks.OfPatches = %v", byPatch)
	}
	got, err := f.gate.ListStatuses(f.ctx, f.db.R(), "demo.git", ps, tips, byPatch)
	if err != nil || len(got) != len(ps) {
		t.Fatalf("ListStatuses: %v, %v", got, err)
	}
	for i, p := range ps {
		fs, err := f.gate.Facts(f.ctx, f.db.R(), p, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if want := submit.ListStatus(fs, tips); !reflect.DeepEqual(got[i], want) {
			t.Errorf("patch %d:\n got %+v\nwant %+v", i+1, got[i], want)
		}
	}
	if !got[0].Submittable || got[1].Submittable || got[2].Submittable {
		t.Errorf("submittable: %v %v %v", got[0].Submittable, got[1].Submittable, got[2].Submittable)
	}
}
