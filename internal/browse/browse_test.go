package browse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
)

// fixture is a bare repository with main (two commits), a branch with a
// slash, a tag, a binary file and a directory.
func fixture(t *testing.T) (Repo, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@b", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(filepath.Join(work, "src"), 0o755)
	run("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "README.md"), []byte("# hi\n"), 0o644)
	os.WriteFile(filepath.Join(work, "src", "a.go"), []byte("package a\n"), 0o644)
	os.WriteFile(filepath.Join(work, "bin"), []byte("\x00\x01"), 0o644)
	run("add", ".")
	run("commit", "-qm", "first")
	c := map[string]string{"first": run("rev-parse", "HEAD")}
	os.WriteFile(filepath.Join(work, "src", "b.go"), []byte("package a\n\nvar b = 1\n"), 0o644)
	run("add", ".")
	run("commit", "-qm", "second", "-m", "The body.")
	c["second"] = run("rev-parse", "HEAD")
	run("branch", "feature/x", c["first"])
	run("branch", "topic", c["second"])
	run("tag", "v1", c["first"])
	bare := filepath.Join(dir, "r.git")
	run("clone", "-q", "--bare", work, bare)
	return Open(bare), c
}

func TestResolve(t *testing.T) {
	r, c := fixture(t)
	tests := []struct {
		path       string
		name, kind string
		commit     string
		rest       string
	}{
		{"main", "main", "branch", c["second"], ""},
		{"main/src/a.go", "main", "branch", c["second"], "src/a.go"},
		{"feature/x/src", "feature/x", "branch", c["first"], "src"}, // the longest branch wins
		{"topic/src", "topic", "branch", c["second"], "src"},
		{"feature/src", "", "", "", ""},
		{"v1/README.md", "v1", "tag", c["first"], "README.md"},
		{c["first"][:8] + "/src", c["first"][:8], "commit", c["first"], "src"},
		{"nope", "", "", "", ""},
		{"main:README.md", "", "", "", ""},
		{"main^", "", "", "", ""},
		{"--all", "", "", "", ""},
		{"HEAD@{1}", "", "", "", ""},
		// Deeper than resolveDirect: the refs under the first segment are
		// listed first; a path 500 deep still finds main, the last name.
		{"main/" + deep(500), "main", "branch", c["second"], deep(500)},
		{"feature/x/" + deep(40), "feature/x", "branch", c["first"], deep(40)},
		{"v1/" + deep(40), "v1", "tag", c["first"], deep(40)},
		{c["first"][:8] + "/" + deep(40), c["first"][:8], "commit", c["first"], deep(40)},
		{"feature/" + deep(40), "", "", "", ""},
		{"nope/" + deep(4000), "", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(text(tt.path), func(t *testing.T) {
			res, rest, err := r.Resolve(context.Background(), strings.Split(tt.path, "/"))
			if tt.name == "" {
				if fault.KindOf(err) != fault.NotFound {
					t.Fatalf("got %+v %v, want not found", res, err)
				}
				return
			}
			if err != nil || res.Name != tt.name || res.Kind != tt.kind || res.Commit != tt.commit || strings.Join(rest, "/") != tt.rest {
				t.Fatalf("got %+v %q %v", res, rest, err)
			}
		})
	}
}

// text clips a long path for a subtest's name.
func text(p string) string { return p[:min(len(p), 40)] }

// deep is a path n segments deep.
func deep(n int) string { return strings.TrimSuffix(strings.Repeat("d/", n), "/") }

func TestReads(t *testing.T) {
	r, c := fixture(t)
	ctx := context.Background()
	root, err := r.Stat(ctx, c["second"], "")
	if err != nil || root.Type != "tree" {
		t.Fatalf("root: %+v %v", root, err)
	}
	es, more, err := r.Tree(ctx, root.OID, 10)
	if err != nil || more {
		t.Fatal(err, more)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name)
	}
	if strings.Join(names, " ") != "src README.md bin" {
		t.Fatalf("tree order %v", names)
	}
	if rd, ok := Readme(es); !ok || rd.Name != "README.md" {
		t.Fatalf("readme %+v", rd)
	}
	if _, more, _ := r.Tree(ctx, root.OID, 2); !more {
		t.Fatal("a cut listing says nothing")
	}
	if _, err := r.Stat(ctx, c["second"], "src/nope.go"); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("missing path: %v", err)
	}
	bin, _ := r.Stat(ctx, c["second"], "bin")
	if b, err := r.ReadBlob(ctx, bin.OID, bin.Size, MaxBlob); err != nil || !b.Binary || b.Data != nil {
		t.Fatalf("binary: %+v %v", b, err)
	}
	src, _ := r.Stat(ctx, c["second"], "src/b.go")
	if b, err := r.ReadBlob(ctx, src.OID, src.Size, 4); err != nil || !b.TooLarge || b.Binary {
		t.Fatalf("too large: %+v %v", b, err)
	}
	if b, err := r.ReadBlob(ctx, src.OID, src.Size, MaxBlob); err != nil || string(b.Data) != "package a\n\nvar b = 1\n" {
		t.Fatalf("text: %+v %v", b, err)
	}
	var buf bytes.Buffer
	if err := r.CopyBlob(ctx, &buf, src.OID, 4); !errors.Is(err, git.ErrCut) || buf.String() != "pack" {
		t.Fatalf("cut copy: %q %v", buf.String(), err)
	}
	cs, more, err := r.Log(ctx, c["second"], 0, 1)
	if err != nil || !more || len(cs) != 1 || cs[0].Subject != "second" {
		t.Fatalf("log page 1: %+v %v %v", cs, more, err)
	}
	cs, more, err = r.Log(ctx, c["second"], 1, 1)
	if err != nil || more || len(cs) != 1 || cs[0].OID != c["first"] {
		t.Fatalf("log page 2: %+v %v %v", cs, more, err)
	}
	cs, more, err = r.Range(ctx, c["first"], c["second"], 10)
	if err != nil || more || len(cs) != 1 || cs[0].Body != "The body." {
		t.Fatalf("range: %+v %v %v", cs, more, err)
	}
	bs, total, err := r.Branches(ctx, 0, 10, nil)
	if err != nil || total != 3 || len(bs) != 3 || bs[0].Name != "main" || !bs[0].Default {
		t.Fatalf("branches: %+v %v %v", bs, total, err)
	}
	// Page by page, each branch once, the default first.
	var paged []string
	for skip := 0; skip < 4; skip++ {
		bs, total, err := r.Branches(ctx, skip, 1, nil)
		if err != nil || total != 3 || len(bs) != min(1, 3-skip) {
			t.Fatalf("branches page %d: %+v %v %v", skip, bs, total, err)
		}
		for _, b := range bs {
			paged = append(paged, b.Name)
		}
	}
	if strings.Join(paged, " ") != "main topic feature/x" && strings.Join(paged, " ") != "main feature/x topic" {
		t.Fatalf("pages: %q", paged)
	}
}

// With many branches the order is remembered while the branches stay as
// they are, and pages read the same as without it; a new branch, a moved
// one or a deleted one is seen at once.
func TestBranchOrders(t *testing.T) {
	r, c := fixture(t)
	ctx := context.Background()
	dir := r.git.Dir
	upd := func(in string) {
		cmd := exec.Command("git", "--git-dir="+dir, "update-ref", "--stdin")
		cmd.Stdin = strings.NewReader(in)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("update-ref: %v\n%s", err, out)
		}
	}
	var in strings.Builder
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&in, "create refs/heads/many/b%03d %s\n", i, c["first"])
	}
	upd(in.String())
	later := time.Now()
	orders := &Orders{Now: func() time.Time { return later }}
	names := func(bs []Branch) string {
		var ns []string
		for _, b := range bs {
			ns = append(ns, b.Name+"@"+b.Commit.OID[:6])
		}
		return strings.Join(ns, " ")
	}
	check := func(what string) {
		t.Helper()
		later = later.Add(time.Hour) // past the settling second
		for _, page := range [][2]int{{0, 100}, {100, 100}, {1, 7}} {
			want, wn, err := r.Branches(ctx, page[0], page[1], nil)
			if err != nil {
				t.Fatal(err)
			}
			for round := 0; round < 2; round++ { // remembered, then from memory
				got, n, err := r.Branches(ctx, page[0], page[1], orders)
				if err != nil || n != wn || names(got) != names(want) {
					t.Fatalf("%s, page %v, round %d: %d %q, want %d %q (%v)", what, page, round, n, names(got), wn, names(want), err)
				}
			}
		}
		if _, ok := orders.get(dir, mustStamp(t, dir, later)); !ok {
			t.Fatalf("%s: not remembered", what)
		}
	}
	check("153 branches")
	upd("create refs/heads/many/new " + c["second"] + "\n")
	check("a new one")
	upd("update refs/heads/many/b007 " + c["second"] + "\n")
	check("a moved one")
	upd("delete refs/heads/many/b010\n")
	check("a deleted one")
	exec.Command("git", "--git-dir="+dir, "pack-refs", "--all").Run()
	check("packed")
	if _, ok := git.RefsStamp(dir, time.Now()); ok {
		t.Fatal("a stamp of a change made just now")
	}
}

func mustStamp(t *testing.T, dir string, now time.Time) string {
	s, ok := git.RefsStamp(dir, now)
	if !ok {
		t.Fatal("no stamp")
	}
	return s
}

// Through a Memo a page's reads answer as without it; viewed again they
// start no git at all (PATH is emptied); a moved branch or tag is seen at
// once.
func TestMemo(t *testing.T) {
	r, c := fixture(t)
	ctx := context.Background()
	later := time.Now().Add(time.Hour) // past the settling second
	m := NewMemo(1<<20, func() time.Time { return later })
	view := func(r Repo) string {
		t.Helper()
		var b strings.Builder
		bs, total, err := r.Branches(ctx, 0, MaxRefs, nil)
		fmt.Fprintln(&b, total, err)
		for _, br := range bs {
			fmt.Fprintln(&b, br.Name, br.Default, br.Commit)
		}
		for _, segs := range [][]string{{"main", "src"}, {"v1"}, {"feature", "x", "README.md"}, {c["second"], "src"}} {
			res, rest, err := r.Resolve(ctx, segs)
			fmt.Fprintln(&b, res, rest, err)
		}
		res, _, err := r.Resolve(ctx, []string{"main"})
		if err != nil {
			t.Fatal(err)
		}
		cs, more, err := r.Log(ctx, res.Commit, 0, 10)
		fmt.Fprintln(&b, cs, more, err)
		for _, p := range []string{"", "src", "src/a.go"} {
			obj, err := r.Stat(ctx, res.Commit, p)
			fmt.Fprintln(&b, obj, err)
			if obj.Type == "tree" {
				es, more, err := r.Tree(ctx, obj.OID, MaxEntries)
				fmt.Fprintln(&b, es, more, err)
			} else if obj.Type == "blob" {
				blob, err := r.ReadBlob(ctx, obj.OID, obj.Size, MaxBlob)
				fmt.Fprintln(&b, blob, err)
			}
		}
		d, err := r.CommitDetail(ctx, res.Commit)
		fmt.Fprintln(&b, d, err)
		rc, more, err := r.Range(ctx, c["first"], c["second"], 10)
		fmt.Fprintln(&b, rc, more, err)
		return b.String()
	}
	check := func(what string) {
		t.Helper()
		want := view(r)
		if got := view(r.WithMemo(m)); got != want {
			t.Fatalf("%s: through the memo\n%s\nwant\n%s", what, got, want)
		}
		path := os.Getenv("PATH")
		t.Setenv("PATH", "")
		if got := view(r.WithMemo(m)); got != want {
			t.Fatalf("%s: viewed again\n%s\nwant\n%s", what, got, want)
		}
		t.Setenv("PATH", path)
	}
	check("as cloned")
	dir := r.git.Dir
	for _, args := range [][]string{{"update-ref", "refs/heads/main", c["first"]}, {"update-ref", "refs/tags/v1", c["second"]}} {
		if out, err := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if _, ok := git.RefsStamp(dir, time.Now()); ok {
			t.Fatal("a stamp of a change made just now")
		}
		later = later.Add(time.Hour)
		check(strings.Join(args, " "))
	}
}
