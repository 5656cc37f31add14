package submit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/git"
)

const pid = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"

// repo is a bare repository and a working clone to make its history in.
type repo struct {
	t    *testing.T
	bare git.Repo
	work string
}

func newRepo(t *testing.T) *repo {
	t.Helper()
	dir := t.TempDir()
	r := &repo{t: t, bare: git.Open(filepath.Join(dir, "bare.git")), work: filepath.Join(dir, "work")}
	if err := git.Init(context.Background(), r.bare.Dir); err != nil {
		t.Fatal(err)
	}
	r.git("init", "-q", "-b", "main", r.work)
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	if args[0] != "init" {
		cmd.Dir = r.work
	}
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_AUTHOR_DATE=1700000000 +0200",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+r.work)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes files (name → content; "" deletes) and commits them with
// msg; the objects reach the bare repository.
func (r *repo) commit(msg string, files map[string]string) string {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.work, name)
		if content == "" {
			os.Remove(p)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
	oid := r.git("rev-parse", "HEAD")
	r.git("push", "-q", "-f", r.bare.Dir, "HEAD:refs/test/"+oid[:8])
	return oid
}

func (r *repo) show(format, oid string) string {
	r.t.Helper()
	out, err := r.bare.Run(context.Background(), nil, "show", "-s", "--format="+format, oid)
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func (r *repo) file(oid, path string) string {
	r.t.Helper()
	out, err := r.bare.Run(context.Background(), nil, "cat-file", "-p", oid+":"+path)
	if err != nil {
		return "<missing>"
	}
	return string(out)
}

// fixture: main has a.txt and b.txt; the patch (two commits) changes a.txt
// and adds c.txt; main then moves on by changing b.txt (or, with clash,
// a.txt too).
type fixture struct {
	r                   *repo
	base, tip, c1, head string
}

func newFixture(t *testing.T, clash bool) fixture {
	r := newRepo(t)
	base := r.commit("init", map[string]string{"a.txt": "a1\na2\na3\n", "b.txt": "b1\n"})
	r.git("checkout", "-q", "-b", "topic")
	c1 := r.commit("Change a\n\nBody of a.", map[string]string{"a.txt": "a1\nA2\na3\n"})
	head := r.commit("Add c\n\nPatch: "+pid, map[string]string{"c.txt": "c\n"})
	r.git("checkout", "-q", "main")
	files := map[string]string{"b.txt": "B1\n"}
	if clash {
		files["a.txt"] = "a1\nX2\na3\n"
	}
	tip := r.commit("Main moves on", files)
	return fixture{r: r, base: base, tip: tip, c1: c1, head: head}
}

func (f fixture) input(strategy string) Input {
	return Input{Strategy: strategy, Tip: f.tip, Base: f.base, Commit: f.head, PatchID: pid, Branch: "main",
		Title: "Change a, add c", Description: "The description.",
		Footers:   []string{"Reviewed-on: https://forge.example/demo/-/patches/" + pid, "Reviewed-by: bob"},
		Committer: Ident{Name: "carol", Email: "carol@collab.invalid"}}
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	r := f.r
	trailers := "Patch: " + pid + "\nReviewed-on: https://forge.example/demo/-/patches/" + pid + "\nReviewed-by: bob"

	res, err := Build(ctx, r.bare, f.input(branches.Merge))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.show("%P", res.Commit); got != f.tip+" "+f.head || res.Written != 1 {
		t.Errorf("merge parents %q", got)
	}
	if r.file(res.Commit, "a.txt") != "a1\nA2\na3\n" || r.file(res.Commit, "b.txt") != "B1\n" || r.file(res.Commit, "c.txt") != "c\n" {
		t.Errorf("merge tree wrong")
	}
	if msg := r.show("%B", res.Commit); !strings.HasSuffix(msg, trailers) || !strings.HasPrefix(msg, "Merge patch 5eed5eed5eed into main") {
		t.Errorf("merge message %q", msg)
	}
	if who := r.show("%an <%ae>|%cn <%ce>", res.Commit); who != "carol <carol@collab.invalid>|carol <carol@collab.invalid>" {
		t.Errorf("merge identities %q", who)
	}

	res, err = Build(ctx, r.bare, f.input(branches.Squash))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.show("%P", res.Commit); got != f.tip {
		t.Errorf("squash parents %q", got)
	}
	if msg := r.show("%B", res.Commit); msg != "Change a, add c\n\nThe description.\n\n"+trailers {
		t.Errorf("squash message %q", msg)
	}
	if who := r.show("%an|%cn", res.Commit); who != "Ada|carol" {
		t.Errorf("squash identities %q", who)
	}
	if r.file(res.Commit, "a.txt") != "a1\nA2\na3\n" || r.file(res.Commit, "b.txt") != "B1\n" {
		t.Errorf("squash tree wrong")
	}

	res, err = Build(ctx, r.bare, f.input(branches.Rebase))
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 2 {
		t.Errorf("rebase wrote %d commits", res.Written)
	}
	first := r.show("%P", res.Commit)
	if r.show("%P", first) != f.tip {
		t.Errorf("rebase is not on the tip: %s", r.show("%P", first))
	}
	for i, oid := range []string{first, res.Commit} {
		want := r.show("%an <%ae> %ad", []string{f.c1, f.head}[i]) + "|carol"
		if who := r.show("%an <%ae> %ad|%cn", oid); who != want || !strings.Contains(want, "+0200") {
			t.Errorf("rebased identities %q, want %q", who, want)
		}
	}
	if msg := r.show("%B", first); msg != "Change a\n\nBody of a.\n\nReviewed-on: https://forge.example/demo/-/patches/"+pid+"\nReviewed-by: bob" {
		t.Errorf("first rebased message %q", msg)
	}
	if msg := r.show("%B", res.Commit); msg != "Add c\n\n"+trailers {
		t.Errorf("rebased tip message %q", msg)
	}
	if r.file(first, "a.txt") != "a1\nA2\na3\n" || r.file(first, "c.txt") != "<missing>" || r.file(res.Commit, "c.txt") != "c\n" || r.file(res.Commit, "b.txt") != "B1\n" {
		t.Errorf("rebased trees wrong")
	}

	_, err = Build(ctx, r.bare, f.input(branches.FFOnly))
	if c := AsConflict(err); c == nil || !strings.Contains(c.Error(), "needs rebase") {
		t.Errorf("ff-only onto a moved branch: %v", err)
	}
	in := f.input(branches.FFOnly)
	in.Tip = f.base
	if res, err = Build(ctx, r.bare, in); err != nil || res.Commit != f.head || res.Written != 0 {
		t.Errorf("ff-only: %+v %v", res, err)
	}
	// A rebase where the branch did not move keeps the trees and still
	// writes the footers.
	in = f.input(branches.Rebase)
	in.Tip = f.base
	if res, err = Build(ctx, r.bare, in); err != nil || r.show("%T", res.Commit) != r.show("%T", f.head) || res.Commit == f.head {
		t.Errorf("rebase onto its own base: %+v %v", res, err)
	}
}

func TestConflicts(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, true)
	for _, s := range []string{branches.Merge, branches.Squash, branches.Rebase} {
		_, err := Build(ctx, f.r.bare, f.input(s))
		c := AsConflict(err)
		if c == nil || len(c.Paths) != 1 || c.Paths[0] != "a.txt" || c.Total != 1 {
			t.Errorf("%s: %v (%+v)", s, err, c)
		}
	}
	// Many conflicting paths: ten are named, then a count.
	r := newRepo(t)
	files := map[string]string{}
	for i := 0; i < 12; i++ {
		files[fmt.Sprintf("f%02d", i)] = "one\n"
	}
	base := r.commit("init", files)
	r.git("checkout", "-q", "-b", "topic")
	for k := range files {
		files[k] = "two\n"
	}
	head := r.commit("topic", files)
	r.git("checkout", "-q", "main")
	for k := range files {
		files[k] = "three\n"
	}
	tip := r.commit("main", files)
	for _, s := range []string{branches.Merge, branches.Rebase} {
		_, err := Build(ctx, r.bare, Input{Strategy: s, Tip: tip, Base: base, Commit: head, PatchID: pid, Committer: Ident{Name: "c", Email: "c@x"}})
		c := AsConflict(err)
		if c == nil || len(c.Paths) != MaxConflictPaths || c.Total != 12 || !strings.HasSuffix(c.Error(), "f09 and 2 more") {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func TestRebaseRefusesMergeCommits(t *testing.T) {
	f := newFixture(t, false)
	r := f.r
	r.git("checkout", "-q", "topic")
	r.git("merge", "-q", "--no-edit", "main")
	head := r.commit("after the merge\n\nPatch: "+pid, map[string]string{"d.txt": "d\n"})
	in := f.input(branches.Rebase)
	in.Commit = head
	_, err := Build(context.Background(), r.bare, in)
	if c := AsConflict(err); c == nil || !strings.Contains(c.Reason, "merge commits") {
		t.Fatalf("rebase of a patch with a merge: %v", err)
	}
	in.Strategy = branches.Merge
	if _, err := Build(context.Background(), r.bare, in); err != nil {
		t.Fatalf("merge of a patch with a merge: %v", err)
	}
}

// A build in a scratch object store writes nothing into the repository.
func TestScratch(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	count := func() string {
		out, err := f.r.bare.Run(ctx, nil, "count-objects")
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	before := count()
	for _, s := range []string{branches.Merge, branches.Squash, branches.Rebase} {
		g, done, err := Scratch(f.r.bare)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Build(ctx, g, f.input(s))
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := g.HasObject(ctx, res.Commit); !ok {
			t.Errorf("%s: the scratch store lacks its result", s)
		}
		done()
	}
	if after := count(); after != before {
		t.Fatalf("objects before %q, after %q", before, after)
	}
}

func TestCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	g := f.r.bare.With("GIT_COMMITTER_NAME=carol", "GIT_COMMITTER_EMAIL=carol@collab.invalid")
	if _, err := g.Run(ctx, nil, "config", "core.logAllRefUpdates", "true"); err != nil {
		t.Fatal(err)
	}
	if err := g.UpdateRefs(ctx, []git.RefUpdate{{Ref: "refs/heads/main", New: f.tip}}); err != nil {
		t.Fatal(err)
	}
	if err := g.CompareAndSwap(ctx, "refs/heads/main", f.head, f.base, "collab submit merge x"); !errors.Is(err, git.ErrMoved) {
		t.Fatalf("a stale old value: %v", err)
	}
	if err := g.CompareAndSwap(ctx, "refs/heads/main", f.head, f.tip, "collab submit merge x"); err != nil {
		t.Fatal(err)
	}
	log, err := g.Reflog("main")
	if err != nil || len(log) == 0 {
		t.Fatal(log, err)
	}
	last := log[len(log)-1]
	if last.Old != f.tip || last.New != f.head || last.Name != "carol" || last.Message != "collab submit merge x" {
		t.Fatalf("reflog %+v", last)
	}
}
