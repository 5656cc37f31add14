package backup

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/git"
)

func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// A git gc that packs the objects and prunes their loose copies while the
// backup walks them: the walk missed them (here: every loose object), the
// connectivity check notices, and the next round copies the new pack.
func TestCompleteObjectsAfterGC(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src.git")
	work := filepath.Join(tmp, "work")
	run(t, tmp, "init", "-q", "--bare", src)
	run(t, tmp, "init", "-q", work)
	for _, f := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(work, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, work, "add", f)
		run(t, work, "commit", "-q", "-m", f)
	}
	run(t, work, "push", "-q", src, "HEAD:refs/heads/main")
	refs, err := git.Repo{Dir: src}.Refs(ctx)
	if err != nil {
		t.Fatal(err)
	}

	dst := filepath.Join(tmp, "dst.git")
	var st stats
	loose := func(rel string, d fs.DirEntry) bool {
		return skipInBackup(rel, d) || (strings.HasPrefix(rel, "objects/") && len(filepath.Base(filepath.Dir(rel))) == 2)
	}
	if err := copyTree(src, dst, loose, &st); err != nil {
		t.Fatal(err)
	}
	if err := writeRefs(dst, refs); err != nil {
		t.Fatal(err)
	}
	if err := (git.Repo{Dir: dst}).CheckConnectivity(ctx); err == nil {
		t.Fatal("the copy without its loose objects passed the connectivity check")
	}
	run(t, src, "repack", "-q", "-a", "-d")
	run(t, src, "prune-packed")
	if err := completeObjects(ctx, src, dst, &st); err != nil {
		t.Fatal(err)
	}
	if got := run(t, tmp, "--git-dir", dst, "rev-parse", "main"); got != refs["refs/heads/main"] {
		t.Fatalf("main = %s, want %s", got, refs["refs/heads/main"])
	}
	if n := run(t, tmp, "--git-dir", dst, "rev-list", "--count", "main"); n != "3" {
		t.Fatalf("%s commits on main, want 3", n)
	}
}

// What a repository's copy leaves out.
func TestSkipInBackup(t *testing.T) {
	for rel, want := range map[string]bool{
		"refs":                          true,
		"logs":                          true,
		"packed-refs":                   true,
		"config":                        false,
		"HEAD":                          false,
		"hooks/pre-receive":             false,
		"objects/ab/cdef":               false,
		"objects/pack/pack-1.pack":      false,
		"objects/pack/pack-1.idx":       false,
		"objects/pack/pack-1.bitmap":    true,
		"objects/pack/tmp_pack_x":       true,
		"objects/tmp_objdir-incoming-x": true,
		"objects/incoming-x":            true,
		"objects/info/commit-graph":     true,
		"objects/info/commit-graphs":    true,
		"objects/pack/multi-pack-index": true,
		"config.lock":                   true,
	} {
		if got := skipInBackup(rel, nil); got != want {
			t.Errorf("skipInBackup(%q) = %v, want %v", rel, got, want)
		}
	}
}
