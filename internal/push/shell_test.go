package push

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The client side in shell-integration/: "git review [BASE] [push args]"
// pushes HEAD to refs/for/BASE (BASE defaulting to origin/HEAD, else main),
// and the ssh config snippet parses with the options the contract names.
func TestGitReviewAlias(t *testing.T) {
	alias, err := filepath.Abs("../../shell-integration/gitconfig")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	git := func(wd string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@b",
			"GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@b")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	bare, work := filepath.Join(dir, "r.git"), filepath.Join(dir, "w")
	git(dir, "init", "-q", "--bare", bare)
	git(bare, "config", "receive.advertisePushOptions", "true")
	git(dir, "init", "-q", "-b", "main", work)
	git(work, "config", "include.path", alias)
	git(work, "remote", "add", "origin", bare)
	git(work, "commit", "-q", "--allow-empty", "-m", "one")
	git(work, "review")
	git(work, "review", "dev", "-o", "title=x")
	git(work, "push", "-q", "origin", "HEAD:trunk")
	git(work, "fetch", "-q", "origin")
	git(work, "remote", "set-head", "origin", "trunk")
	git(work, "commit", "-q", "--allow-empty", "-m", "two")
	git(work, "review")
	head := git(work, "rev-parse", "HEAD")
	refs := git(bare, "for-each-ref", "--format=%(refname) %(objectname)", "refs/for/")
	want := []string{"refs/for/dev " + git(work, "rev-parse", "HEAD^"), "refs/for/main " + git(work, "rev-parse", "HEAD^"), "refs/for/trunk " + head}
	if refs != strings.Join(want, "\n") {
		t.Errorf("refs after git review:\n%s\nwant\n%s", refs, strings.Join(want, "\n"))
	}
}

func TestSSHConfigSnippet(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	out, err := exec.Command("ssh", "-G", "-F", "../../shell-integration/ssh_config", "forge").CombinedOutput()
	if err != nil {
		t.Fatalf("ssh -G: %v: %s", err, out)
	}
	for _, want := range []string{"identitiesonly yes", "controlmaster auto", "controlpersist 600", "controlpath ", "user git"} {
		if !strings.Contains(string(out), "\n"+want) {
			t.Errorf("ssh -G lacks %q", want)
		}
	}
}
