//go:build postgres

package pgtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBackupThroughBouncer: a forge whose db setting names the host's
// pgbouncer (transaction pooling), as docs/operations.md has it, takes an
// issue and a patch pushed through the forced command (its hooks reach
// the record through pgbouncer too), and is backed up as it is (pg_dump
// sets session parameters before its transaction, which pgbouncer does
// not keep from one transaction to the next). The backup restores, through
// a pgbouncer too, to a forge that holds the issue and the patch and that
// fsck finds sound. (pg_restore empties search_path for its session:
// without server_reset_query_always, pgbouncer handed that to the next
// client: the restore's own check found no table there, as every query of
// the forge on that server connection would have.)
func TestBackupThroughBouncer(t *testing.T) {
	f := newPGForge(t)
	via := f.pooled("forge")

	root := filepath.Join(t.TempDir(), "root")
	f.must(root, nil, "init", "--db", via)
	f.must(root, nil, "repo", "create", "demo")
	f.must(root, nil, "user", "add", "alice")
	f.must(root, nil, "grant", "alice", "demo", "write")
	out, code := f.as(root, "alice", "issue new demo --title 'kept through pgbouncer'")
	issue := regexp.MustCompile(`[0-9a-f]{40}`).FindString(out)
	if code != 0 || issue == "" {
		t.Fatalf("issue new: exit %d\n%s", code, out)
	}
	f.pushAs(root, "alice", "HEAD:main", "init")
	f.pushAs(root, "alice", "HEAD:refs/for/main", "Kept through pgbouncer\n\nPatch: 5eed5eed5eed5eed")

	dir := filepath.Join(t.TempDir(), "backup")
	f.must(root, nil, "backup", dir)
	// The new root's record is reached through a pgbouncer too.
	spareVia := f.pooled("spare")
	restored := filepath.Join(t.TempDir(), "restored")
	f.must(restored, nil, "restore", "--db", spareVia, dir)
	if out := f.must(restored, nil, "fsck"); !strings.Contains(out, "0 problems") {
		t.Errorf("fsck of the restored forge:\n%s", out)
	}
	if out, code := f.as(restored, "alice", "issue list demo"); code != 0 || !strings.Contains(out, issue) {
		t.Errorf("issue list on the restored forge: exit %d\n%s", code, out)
	}
	if out, code := f.as(restored, "alice", "patch list demo"); code != 0 || !strings.Contains(out, "Kept through pgbouncer") {
		t.Errorf("patch list on the restored forge: exit %d\n%s", code, out)
	}
}

// pushAs commits msg in a clone of root's demo kept beside it and pushes
// it to ref as who, failing the test unless the push is taken.
func (f *pgForge) pushAs(root, who, ref, msg string) {
	f.t.Helper()
	if _, out, err := f.push(root, who, ref, msg, false); err != nil {
		f.t.Fatalf("push %s: %v\n%s", ref, err, out)
	}
}

// push commits msg in a clone of root's demo kept beside it and pushes it
// to ref as who, through the forced command (serve --as) as sshd would run
// it: a stand-in for ssh hands git's command to it. With amend the commit
// replaces the last one (a patch's next revision). It returns the commit
// and, when the push failed, git's output and error.
func (f *pgForge) push(root, who, ref, msg string, amend bool) (oid, out string, err error) {
	work := root + ".work"
	transport := root + ".ssh-" + who
	script := fmt.Sprintf("#!/bin/sh\nfor last; do :; done\nSSH_ORIGINAL_COMMAND=$last exec %s --root %s serve --as %s\n", f.bin(), root, who)
	if err := os.WriteFile(transport, []byte(script), 0o755); err != nil {
		return "", "", err
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_SSH_COMMAND="+transport, "GIT_SSH_VARIANT=ssh", "GIT_CONFIG_NOSYSTEM=1", "HOME="+f.dir,
			"GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return string(out), err
	}
	if _, err := os.Stat(work); err != nil {
		if out, err := git("init", "-q", "-b", "main", work); err != nil {
			return "", out, err
		}
	}
	commit := []string{"-C", work, "commit", "-q", "--allow-empty", "-m", msg}
	if amend {
		commit = append(commit, "--amend")
	}
	if out, err := git(commit...); err != nil {
		return "", out, err
	}
	if out, err = git("-C", work, "rev-parse", "HEAD"); err != nil {
		return "", out, err
	}
	oid = strings.TrimSpace(out)
	out, err = git("-C", work, "push", "-q", "ssh://forge/demo.git", ref)
	return oid, out, err
}
