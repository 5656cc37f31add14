package backup

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/repos"
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
func TestCopyObjectsAfterGC(t *testing.T) {
	for _, relocated := range []bool{false, true} {
		t.Run(fmt.Sprintf("relocated=%v", relocated), func(t *testing.T) {
			ctx := context.Background()
			tmp := t.TempDir()
			src := filepath.Join(tmp, "src.git")
			work := filepath.Join(tmp, "work")
			run(t, tmp, "init", "-q", "--bare", src)
			if relocated {
				if moved, err := repos.Relocate(src); err != nil || !moved {
					t.Fatalf("Relocate = %v, %v", moved, err)
				}
			}
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
			objects, err := filepath.EvalSymlinks(filepath.Join(src, "objects"))
			if err != nil {
				t.Fatal(err)
			}

			// A walk that found the loose objects gone.
			dst := filepath.Join(tmp, "dst.git")
			var st stats
			if err := copyTree(src, dst, skipInBackup, &st); err != nil {
				t.Fatal(err)
			}
			loose := func(rel string, d fs.DirEntry) bool {
				return skipObjectCaches(rel, d) || len(filepath.Base(filepath.Dir(rel))) == 2
			}
			if err := copyTree(objects, filepath.Join(dst, "objects"), loose, &st); err != nil {
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
			if err := copyObjects(ctx, objects, dst, &st); err != nil {
				t.Fatal(err)
			}
			if got := run(t, tmp, "--git-dir", dst, "rev-parse", "main"); got != refs["refs/heads/main"] {
				t.Fatalf("main = %s, want %s", got, refs["refs/heads/main"])
			}
			if n := run(t, tmp, "--git-dir", dst, "rev-list", "--count", "main"); n != "3" {
				t.Fatalf("%s commits on main, want 3", n)
			}
			// The copy has the stock layout, whatever the source's.
			if !repos.Unrelocated(dst) {
				t.Fatal("the copy's objects/ is not a directory")
			}
			if _, err := os.Lstat(filepath.Join(dst, repos.ObjectStore)); err == nil {
				t.Fatalf("the copy has %s/", repos.ObjectStore)
			}
		})
	}
}

// What a repository's copy leaves out, and what its objects' copy does.
func TestSkipInBackup(t *testing.T) {
	for rel, want := range map[string]bool{
		"refs":              true,
		"logs":              true,
		"packed-refs":       true,
		"objects":           true,
		"odb":               true,
		"config":            false,
		"HEAD":              false,
		"hooks/pre-receive": false,
		"config.lock":       true,
	} {
		if got := skipInBackup(rel, nil); got != want {
			t.Errorf("skipInBackup(%q) = %v, want %v", rel, got, want)
		}
	}
	for rel, want := range map[string]bool{
		"ab/cdef":               false,
		"pack/pack-1.pack":      false,
		"pack/pack-1.idx":       false,
		"pack/pack-1.bitmap":    true,
		"pack/tmp_pack_x":       true,
		"tmp_objdir-incoming-x": true,
		"incoming-x":            true,
		"info/commit-graph":     true,
		"info/commit-graphs":    true,
		"pack/multi-pack-index": true,
		"pack/pack-1.keep.lock": true,
	} {
		if got := skipObjectCaches(rel, nil); got != want {
			t.Errorf("skipObjectCaches(%q) = %v, want %v", rel, got, want)
		}
	}
}
