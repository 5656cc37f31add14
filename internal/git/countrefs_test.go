package git

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CountRefs reads packed and loose refs, each name once, and agrees with
// git's own listing.
func TestCountRefs(t *testing.T) {
	dir := t.TempDir()
	run := func(stdin string, args ...string) string {
		cmd := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("", "init", "-q", "--bare")
	c := run("x\n", "commit-tree", run("", "mktree"))
	r := Open(dir)
	count := func() int {
		n, err := r.CountRefs(context.Background(), "refs/heads/", "refs/tags/")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("empty: %d", n)
	}
	run("create refs/heads/a "+c+"\ncreate refs/heads/x/b "+c+"\ncreate refs/tags/t "+c+"\ncreate refs/notes/n "+c+"\n", "update-ref", "--stdin")
	if n := count(); n != 3 {
		t.Fatalf("loose: %d", n)
	}
	run("", "pack-refs", "--all")
	run("create refs/heads/c "+c+"\n", "update-ref", "--stdin")
	run("update refs/heads/a "+c+"\n", "update-ref", "--stdin")
	os.WriteFile(filepath.Join(dir, "refs", "heads", "a"), []byte(c+"\n"), 0o644) // a loose copy of a packed ref
	if n := count(); n != 4 {
		t.Fatalf("packed and loose: %d", n)
	}
	run("delete refs/heads/x/b\n", "update-ref", "--stdin")
	if n, want := count(), strings.Count(run("", "for-each-ref", "--format=.", "refs/heads/", "refs/tags/"), "."); n != want || n != 3 {
		t.Fatalf("after a delete: %d, git says %d", n, want)
	}
}
