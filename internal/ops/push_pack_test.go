package ops

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecentPackObjects(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@b", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	for i := 0; i < 3; i++ {
		git("commit", "-q", "--allow-empty", "-m", "c")
	}
	gitDir := filepath.Join(dir, ".git")
	head := git("rev-parse", "HEAD")
	if n := RecentPackObjects(gitDir, head, time.Now()); n != 0 {
		t.Errorf("no pack yet: %d", n)
	}
	git("repack", "-q", "-a", "-d")
	objects := 4 // three commits and the empty tree
	if n := RecentPackObjects(gitDir, head, time.Now()); n != objects {
		t.Errorf("after repack: %d objects, want %d", n, objects)
	}
	if n := RecentPackObjects(gitDir, git("rev-parse", "HEAD^{tree}"), time.Now()); n != objects {
		t.Errorf("the tree: %d", n)
	}
	if n := RecentPackObjects(gitDir, strings.Repeat("0", 40), time.Now()); n != 0 {
		t.Errorf("an object not in the pack: %d", n)
	}
	if n := RecentPackObjects(gitDir, head, time.Now().Add(2*time.Minute)); n != 0 {
		t.Errorf("an old pack: %d", n)
	}
}
