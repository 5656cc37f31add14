package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/buildtest"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

// heavy are packages collab-hook-fast must never link: it exists to start
// without them.
var heavy = []string{
	"modernc.org/sqlite",
	"modernc.org/libc",
	"github.com/urfave/cli/v2",
	"golang.org/x/crypto/ssh",
	"net/http",
	// net's initialisation is a fifth of this binary's; the journal
	// speaks to journald's socket with plain syscalls.
	"net",
	"regexp",
	"github.com/collab-forge/collab/internal/store",
	"github.com/collab-forge/collab/internal/forge",
}

func TestFastDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	buildtest.LinksNone(t, ".", "", "collab-hook-fast", heavy)
}

// build puts collab-hook-fast in a fresh directory beside a stand-in
// collab-hook that says it was run, with what, and exits 42: a test sees
// whether the fast binary decided or handed over.
func build(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	buildtest.Build(t, ".", filepath.Join(dir, "collab-hook-fast"), "")
	stub := "#!/bin/sh\necho \"collab-hook ran: $*\" >&2\nexit 42\n"
	if err := os.WriteFile(filepath.Join(dir, "collab-hook"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir,
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// demoRepo makes ROOT/repos/demo.git with main at two, one commit after
// one.
func demoRepo(t *testing.T) (root, repo, one, two string) {
	t.Helper()
	root = t.TempDir()
	repo = filepath.Join(root, "repos", "demo.git")
	runGit(t, root, "init", "-q", "--bare", repo)
	work := filepath.Join(t.TempDir(), "work")
	runGit(t, root, "init", "-q", "-b", "main", work)
	runGit(t, work, "commit", "-q", "--allow-empty", "-m", "one")
	one = runGit(t, work, "rev-parse", "HEAD")
	runGit(t, work, "commit", "-q", "--allow-empty", "-m", "two")
	two = runGit(t, work, "rev-parse", "HEAD")
	runGit(t, work, "push", "-q", repo, "HEAD:refs/heads/main")
	return root, repo, one, two
}

// TestPreReceive runs the binary as git runs the hook: it decides a push
// serve stamped, exactly as collab-hook's pre-receive would, and hands any
// other to collab-hook before reading git's input.
func TestPreReceive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	root, repo, one, two := demoRepo(t)
	zero := strings.Repeat("0", 40)

	lim := pushlimit.Defaults()
	// A stamp made as the case runs, ago before it: however slow the
	// machine, only the stale case is older than CheckedFresh.
	stamp := func(level access.Level, ago time.Duration, rules map[string]pushcheck.Rule, more ...string) func() []string {
		return func() []string {
			h := hookenv.Handoff{Principal: "alice", Root: root,
				Checked: hookenv.Check{Level: level, Repo: "demo.git", At: time.Now().Add(-ago)}, Limits: &lim, Rules: rules}
			return append(h.Encode(), more...)
		}
	}
	env := func(kv ...string) func() []string { return func() []string { return kv } }
	protected := map[string]pushcheck.Rule{"main": {Branch: "main"}}
	adminPush := map[string]pushcheck.Rule{"main": {Branch: "main", AdminPush: true}}
	for _, tc := range []struct {
		name   string
		env    func() []string
		stdin  string
		code   int
		stderr string // a line it must hold ("" : none at all)
	}{
		{"stamped, no rules", stamp(access.Write, 0, map[string]pushcheck.Rule{}), one + " " + two + " refs/heads/main\n", 0, ""},
		{"stamped, new branch", stamp(access.Write, 0, protected), zero + " " + two + " refs/heads/topic\n", 0, ""},
		{"protected main, writer", stamp(access.Write, 0, protected), one + " " + two + " refs/heads/main\n", 1,
			"collab: branch main is protected: push to refs/for/main and use patch submit"},
		{"protected main, admin may push", stamp(access.Admin, 0, adminPush), one + " " + two + " refs/heads/main\n", 0, ""},
		{"protected main, admin rewinds", stamp(access.Admin, 0, adminPush), two + " " + one + " refs/heads/main\n", 1,
			"collab: cannot force-push protected branch main"},
		{"protected main, delete", stamp(access.Admin, 0, protected), two + " " + zero + " refs/heads/main\n", 1,
			"collab: cannot delete protected branch main"},
		{"refs/collab", stamp(access.Admin, 0, map[string]pushcheck.Rule{}), zero + " " + two + " refs/collab/x\n", 1,
			"collab: cannot create refs/collab/x"},
		{"unknown push option", stamp(access.Write, 0, map[string]pushcheck.Rule{}, "GIT_PUSH_OPTION_COUNT=1", "GIT_PUSH_OPTION_0=bogus"),
			zero + " " + two + " refs/for/main\n", 1, "collab: unknown push option"},
		{"bad input", stamp(access.Write, 0, map[string]pushcheck.Rule{}), "not a line\n", 1, "collab: internal error"}, // git never sends one,
		// Not covered by the stamp: collab-hook decides.
		{"no stamp", env("COLLAB_PRINCIPAL=alice"), one + " " + two + " refs/heads/main\n", 42,
			"collab-hook ran: --root " + root + " hook pre-receive"},
		{"stale stamp", stamp(access.Write, hookenv.CheckedFresh+time.Minute, protected), one + " " + two + " refs/heads/main\n", 42, "collab-hook ran"},
		{"read access only", stamp(access.Read, 0, protected), one + " " + two + " refs/heads/main\n", 42, "collab-hook ran"},
		{"rules not handed off", stamp(access.Write, 0, nil), one + " " + two + " refs/heads/main\n", 42, "collab-hook ran"},
		{"local push", env(), one + " " + two + " refs/heads/main\n", 42, "collab-hook ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(filepath.Join(bin, "collab-hook-fast"), "--root", root, "hook", "pre-receive")
			cmd.Dir = repo
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "GIT_DIR=.", "COLLAB_JOURNAL_SOCKET=" + filepath.Join(root, "no-journal")}, tc.env()...)
			cmd.Stdin = strings.NewReader(tc.stdin)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, errb.String())
			}
			if tc.stderr == "" && errb.Len() > 0 {
				t.Fatalf("stderr %q, want none", errb.String())
			}
			if !strings.Contains(errb.String(), tc.stderr) || strings.Count(errb.String(), "\n") > 1 {
				t.Fatalf("stderr %q, want one line with %q", errb.String(), tc.stderr)
			}
		})
	}
}

// TestPreReceiveGate: a push that passes and moves no branch the merge
// scan follows, or moves one only by new commits that name none of its
// patches from where its scan ended, shuts the post-receive gate (fd
// hookenv.GateFD) serve handed git, so that git skips post-receive; any
// other leaves it open.
func TestPreReceiveGate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	root, repo, one, two := demoRepo(t)
	lim := pushlimit.Defaults()
	protected := map[string]pushcheck.Rule{"dev": {Branch: "dev"}}
	main := []hookenv.Followed{{Branch: "main"}}
	// main's scan ended at one, and two, the push's commit, names none
	// of its patches.
	scannedToOne := []hookenv.Followed{{Branch: "main", Tip: one, IDs: []string{"0123456789abcdef"}}}
	for _, tc := range []struct {
		name     string
		followed []hookenv.Followed // nil: no PostReceiveVar
		stdin    string
		code     int
		open     bool
	}{
		{"refs/for", main, one + " " + two + " refs/for/main\n", 0, false},
		{"a branch nothing follows", main, one + " " + two + " refs/heads/topic\n", 0, false},
		{"a followed branch", main, one + " " + two + " refs/heads/main\n", 0, true},
		{"a followed branch, by a commit naming no patch of it", scannedToOne, one + " " + two + " refs/heads/main\n", 0, false},
		{"a followed branch whose scan is behind", scannedToOne, two + " " + one + " refs/heads/main\n", 0, true},
		{"none followed", []hookenv.Followed{}, one + " " + two + " refs/heads/main\n", 0, false},
		{"no list handed off", nil, one + " " + two + " refs/for/main\n", 0, true},
		{"refused", main, one + " " + two + " refs/heads/dev\n", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate, err := hookenv.OpenGate([]byte("#!/proc/self/fd/4\n"))
			if err != nil {
				t.Fatal(err)
			}
			defer gate.Close()
			h := hookenv.Handoff{Principal: "alice", Root: root,
				Checked: hookenv.Check{Level: access.Write, Repo: "demo.git", At: time.Now()}, Limits: &lim, Rules: protected}
			env := append([]string{"PATH=" + os.Getenv("PATH"), "GIT_DIR=.", "COLLAB_JOURNAL_SOCKET=" + filepath.Join(root, "no-journal")}, h.Encode()...)
			if tc.followed != nil {
				env = append(env, hookenv.ScannedEnv(tc.followed)...)
			}
			// Pushed loose, demoRepo's commits stand in for a push's
			// quarantine.
			env = append(env, "GIT_QUARANTINE_PATH="+filepath.Join(repo, "objects"))
			cmd := exec.Command(filepath.Join(bin, "collab-hook-fast"), "--root", root, "hook", "pre-receive")
			cmd.Dir, cmd.Env = repo, env
			// fds 3 and 4 (the relay, the program) are not needed here.
			cmd.ExtraFiles = []*os.File{nil, nil, gate}
			cmd.Stdin = strings.NewReader(tc.stdin)
			var errb bytes.Buffer
			cmd.Stderr = &errb
			err = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Fatalf("exit %d (%v), want %d; stderr:\n%s", code, err, tc.code, errb.String())
			}
			st, err := gate.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if open := st.Mode().Perm()&0o100 != 0; open != tc.open {
				t.Fatalf("gate open %v (%v), want %v; stderr:\n%s", open, st.Mode(), tc.open, errb.String())
			}
		})
	}
}

// TestHandsOver: every other command line reaches collab-hook whole.
func TestHandsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	root := t.TempDir()
	for _, args := range [][]string{
		{"--root", root, "repo", "list"},
		{"--help"},
		{"--root", root, "hook", "proc-receive"},
		{"--root", root, "serve", "--as", "alice"},
		// No database, so no key index: only collab-hook can say so.
		{"--root", root, "keys-command", "git", "ssh-ed25519", "AAAA"},
	} {
		cmd := exec.Command(filepath.Join(bin, "collab-hook-fast"), args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 42 || strings.TrimSpace(errb.String()) != "collab-hook ran: "+strings.Join(args, " ") {
			t.Errorf("%v: %v, stderr %q; want collab-hook run with the same arguments", args, err, errb.String())
		}
	}
}

// TestInitBudget bounds what a start of collab-hook-fast initialises
// (GODEBUG=inittrace=1): a count, so the test does not depend on the
// machine; bench/push prints the time.
func TestInitBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds collab-hook-fast")
	}
	bin := build(t)
	inits, allocated, _ := buildtest.Inits(t, filepath.Join(bin, "collab-hook-fast"), "--root", t.TempDir(), "keys-command", "git", "ssh-ed25519", "AAAA")
	t.Logf("%d package inits, %d bytes", inits, allocated)
	if inits > 50 || allocated > 16<<10 {
		t.Errorf("%d package inits allocating %d bytes at start-up, budget 50 and 16 KiB", inits, allocated)
	}
}
