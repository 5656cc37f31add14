package serve

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/forge/forgetest"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/relay"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/shellwords"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/verbs"
)

type fixture struct {
	root    forge.Root
	db      *store.DB
	alice   string // alice's key line
	aliceFP string
}

const (
	aliceKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGf2DHqyOzCvqS8bAOt2yyxBlB4bD0iUv8eJz+M0fFOB alice@test"
	bobKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOgGDxmB4+eSUuC0Nt5wEgZC30K6KsYWpAkmm0UFI0Ls bob@test"
)

func setup(t *testing.T) *fixture {
	t.Helper()
	ctx, root, db := forgetest.NewWith(t, map[string]string{"url": "http://forge.test", "ssh": "ssh://git@forge.test"})
	now := time.Now()
	for _, r := range []struct {
		name   string
		public bool
	}{{"demo", false}, {"org/pub", true}, {"secret", false}} {
		if _, err := repos.Create(ctx, root, db, r.name, r.public, "", "/bin/true", now); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"alice", "bob", "gone"} {
		if err := principals.Add(ctx, db, p, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := principals.SetDisabled(ctx, db, "gone", true); err != nil {
		t.Fatal(err)
	}
	if err := principals.SetGrant(ctx, db, "alice", "demo.git", access.Write); err != nil {
		t.Fatal(err)
	}
	if err := principals.SetGrant(ctx, db, "bob", "demo.git", access.Read); err != nil {
		t.Fatal(err)
	}
	k, _, err := principals.AddKey(ctx, db, "alice", aliceKey, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := principals.AddKey(ctx, db, "bob", bobKey, now); err != nil {
		t.Fatal(err)
	}
	// A symlink inside repos/ that points out of it, and one that stays in.
	outside := filepath.Join(t.TempDir(), "evil.git")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root.ReposDir(), "evil.git")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.R().ExecContext(ctx, `INSERT INTO repos(name, public, created_at) VALUES ('evil.git', 1, '2026-01-01T00:00:00.000Z')`); err != nil {
		t.Fatal(err)
	}
	return &fixture{root: root, db: db, alice: aliceKey, aliceFP: k.Fingerprint}
}

type result struct {
	code           int
	stdout, stderr string
	execs          [][]string
	env            []string
}

func (f *fixture) run(t *testing.T, principal, command string, mod func(*Request)) result {
	t.Helper()
	var out, errb bytes.Buffer
	var res result
	r := &Request{
		Root:      f.root,
		Principal: principal,
		Command:   command,
		Environ: []string{"PATH=/usr/bin:/bin", "HOME=/home/git", "GIT_PROTOCOL=version=2",
			"LD_PRELOAD=/tmp/evil.so", "GIT_CONFIG_PARAMETERS='core.sshCommand=id'", "GIT_DIR=/etc",
			"COLLAB_JOURNAL_SOCKET=/run/j", "COLLAB_PRINCIPAL=mallory", "COLLAB_ROOT=/elsewhere", "COLLAB_HOOK_FD=0",
			"SSH_ORIGINAL_COMMAND=" + command, "SSH_CONNECTION=1.2.3.4 5 6.7.8.9 22"},
		Stdin:  strings.NewReader(""),
		Stdout: &out,
		Stderr: &errb,
		Log:    slog.New(slog.DiscardHandler),
		Now:    time.Now,
		Exec: func(path string, argv, env []string) error {
			res.execs = append(res.execs, append([]string{path}, argv...))
			res.env = env
			return nil // a real exec never returns; Run then reports failure
		},
	}
	if mod != nil {
		mod(r)
	}
	res.code = Run(context.Background(), r)
	res.stdout, res.stderr = out.String(), errb.String()
	return res
}

func TestGitCommands(t *testing.T) {
	f := setup(t)
	demo := filepath.Join(f.root.ReposDir(), "demo.git")
	pub := filepath.Join(f.root.ReposDir(), "org", "pub.git")
	for _, tc := range []struct {
		who, cmd string
		argv     []string
	}{
		{"alice", "git-upload-pack 'demo.git'", []string{"git", "upload-pack", demo}},
		{"alice", "git-upload-pack '/demo.git'", []string{"git", "upload-pack", demo}},
		{"alice", "git-upload-pack demo", []string{"git", "upload-pack", demo}},
		{"alice", "git upload-pack 'demo'", []string{"git", "upload-pack", demo}},
		{"alice", "git-receive-pack 'demo.git'", []string{"git", "-c", "receive.maxInputSize=2147483648", "receive-pack", demo}},
		{"alice", "git receive-pack '/demo'", []string{"git", "-c", "receive.maxInputSize=2147483648", "receive-pack", demo}},
		{"bob", "git-upload-archive 'demo.git'", []string{"git", "upload-archive", demo}},
		{"bob", "git-upload-pack 'org/pub.git'", []string{"git", "upload-pack", pub}},
		{"bob", "git-upload-pack '/org/pub'", []string{"git", "upload-pack", pub}},
	} {
		res := f.run(t, tc.who, tc.cmd, nil)
		if len(res.execs) != 1 {
			t.Errorf("%s %q: no exec; exit %d, stderr %q", tc.who, tc.cmd, res.code, res.stderr)
			continue
		}
		got := res.execs[0]
		if !strings.HasSuffix(got[0], "/git") || !reflect.DeepEqual(got[1:], tc.argv) {
			t.Errorf("%s %q: exec %q, want git %q", tc.who, tc.cmd, got, tc.argv)
		}
	}
}

// The push limits serve hands receive-pack are the settings of the moment:
// receive.maxInputSize on git's command line (none for 0), the rest in the
// hand-off; upload-pack gets neither.
func TestPushLimitsHandedOff(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	for k, v := range map[string]string{pushlimit.SettingForRefs: "3", pushlimit.SettingInputSize: "0"} {
		if err := store.SetSetting(ctx, f.db.R(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	res := f.run(t, "alice", "git-receive-pack demo", nil)
	want := pushlimit.Defaults()
	want.ForRefs, want.InputSize = 3, 0
	if len(res.execs) != 1 || slices.Contains(res.execs[0], "-c") || !slices.Contains(res.env, "COLLAB_PUSH_LIMITS="+want.Encode()) {
		t.Fatalf("exec %q env %q", res.execs, res.env)
	}
	res = f.run(t, "alice", "git-upload-pack demo", nil)
	for _, kv := range res.env {
		if strings.HasPrefix(kv, "COLLAB_PUSH_LIMITS=") {
			t.Fatalf("upload-pack got %s", kv)
		}
	}
}

// A push through Start gets the same: git starts with the bound the last
// push found (the default at first), and one that finds the setting
// changed starts git again with the new bound, before anything passed;
// the next push starts git once. The other limits are in the hand-off.
func TestPushLimitsHeld(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	var starts [][]string
	var late map[string]string
	push := func() {
		t.Helper()
		starts, late = nil, nil
		res := f.run(t, "alice", "git-receive-pack demo", func(r *Request) {
			r.Start = func(ctx context.Context, path string, argv, env []string, stdin, stdout *os.File, files []*os.File) (func() (int, error), error) {
				starts = append(starts, argv)
				return fakeStart(func(_ string, _, _ []string, fs []*os.File) (int, error) {
					late = hookenv.ReadLate(fs[len(fs)-1].Fd())
					return 0, nil
				})(ctx, path, argv, env, stdin, stdout, files)
			}
		})
		if res.code != 0 {
			t.Fatalf("exit %d: %s", res.code, res.stderr)
		}
	}
	bound := func(argv []string) string {
		for _, a := range argv {
			if v, ok := strings.CutPrefix(a, "receive.maxInputSize="); ok {
				return v
			}
		}
		return "none"
	}
	push()
	if len(starts) != 1 || bound(starts[0]) != "2147483648" {
		t.Errorf("default: started %q", starts)
	}
	for k, v := range map[string]string{pushlimit.SettingForRefs: "3", pushlimit.SettingInputSize: "0"} {
		if err := store.SetSetting(ctx, f.db.R(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	want := pushlimit.Defaults()
	want.ForRefs, want.InputSize = 3, 0
	for i, starts1 := range []int{2, 1} {
		push()
		if len(starts) != starts1 || bound(starts[len(starts)-1]) != "none" || late[hookenv.LimitsVar] != want.Encode() {
			t.Errorf("push %d after the change: started %q, hand-off %q", i+1, starts, late)
		}
	}
}

// git and the hooks get PATH, HOME, the principal (also as git's committer,
// for the branch reflogs), the root, GIT_PROTOCOL and serve's own COLLAB_*
// variables, nothing else.
func TestCleanEnvironment(t *testing.T) {
	f := setup(t)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	at := func(r *Request) { r.Now = func() time.Time { return now } }
	res := f.run(t, "alice", "git-receive-pack 'demo.git'", at)
	want := []string{"PATH=/usr/bin:/bin", "HOME=/home/git", "COLLAB_PRINCIPAL=alice", "COLLAB_ROOT=" + f.root.Dir,
		"GIT_PROTOCOL=version=2", "COLLAB_JOURNAL_SOCKET=/run/j", "COLLAB_ACCESS=write demo.git 1795946400000",
		"GIT_COMMITTER_NAME=alice", "GIT_COMMITTER_EMAIL=alice@collab.invalid", "COLLAB_PUSH_LIMITS=" + pushlimit.Defaults().Encode(), "COLLAB_BRANCH_RULES=-"}
	if !sameSet(res.env, want) {
		t.Errorf("env %q\nwant %q", res.env, want)
	}
	res = f.run(t, "alice", "git-upload-pack demo", func(r *Request) {
		at(r)
		r.Environ = []string{"GIT_PROTOCOL=version=2\nLD_PRELOAD=x"}
		r.URL = "http://override.test"
	})
	want = []string{"PATH=" + DefaultPath, "COLLAB_PRINCIPAL=alice", "COLLAB_ROOT=" + f.root.Dir, "COLLAB_URL=http://override.test",
		"COLLAB_ACCESS=write demo.git 1795946400000", "GIT_COMMITTER_NAME=alice", "GIT_COMMITTER_EMAIL=alice@collab.invalid"}
	if !sameSet(res.env, want) {
		t.Errorf("env %q\nwant %q", res.env, want)
	}
}

// With Start, serve runs receive-pack as its child with the late
// hand-off as fd 3, named by its own COLLAB_HANDOFF_FD (never one it
// inherited), and exits with git's code; upload-pack is still exec'd.
func TestReceivePackRelays(t *testing.T) {
	f := setup(t)
	var spawned [][]string
	spawn := func(r *Request) {
		r.Start = fakeStart(func(path string, argv, env []string, files []*os.File) (int, error) {
			spawned = append(spawned, argv)
			var fds []string
			for _, kv := range env {
				if strings.HasPrefix(kv, hookenv.HandoffFDVar+"=") || strings.HasPrefix(kv, "COLLAB_HOOK_FD=") {
					fds = append(fds, kv)
				}
			}
			if len(fds) != 1 || fds[0] != hookenv.HandoffFDVar+"=3" {
				t.Errorf("env has %q", fds)
			}
			if len(files) != 1 {
				t.Fatalf("%d files", len(files))
			}
			if late := hookenv.ReadLate(files[0].Fd()); late[hookenv.AccessVar] == "" {
				t.Errorf("fd 3 is not the sealed hand-off: %q", late)
			}
			return 5, nil
		})
	}
	res := f.run(t, "alice", "git-receive-pack 'demo.git'", spawn)
	if res.code != 5 || len(spawned) != 1 || len(res.execs) != 0 || spawned[0][len(spawned[0])-2] != "receive-pack" {
		t.Errorf("receive-pack: exit %d, spawned %q, exec'd %q", res.code, spawned, res.execs)
	}
	res = f.run(t, "alice", "git-upload-pack 'demo.git'", spawn)
	if len(spawned) != 1 || len(res.execs) != 1 {
		t.Errorf("upload-pack: spawned %q, exec'd %q", spawned, res.execs)
	}
}

// Where demo.git's hooks are exactly the shims for serve's binary, git
// is pointed at the root's hooks directory and handed the hook script as
// fd 4 (relay.Script, which falls back to that binary); otherwise it runs
// the repository's hooks, as it would without serve.
func TestReceivePackDirectHooks(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	bin := t.TempDir()
	binary := filepath.Join(bin, "collab-hook")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join(f.root.ReposDir(), "demo.git")
	hooksPath := "core.hooksPath=" + filepath.Join(f.root.Dir, "hooks")
	for _, tc := range []struct {
		name   string
		binary string
		change func(t *testing.T)
		direct bool
	}{
		{"shims for this binary", binary, func(t *testing.T) {
			if err := repos.Configure(ctx, f.root, demo, binary); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"no binary known", "", func(*testing.T) {}, false},
		{"shims for another binary", "/elsewhere/collab-hook", func(*testing.T) {}, false},
		{"a shim an operator made unexecutable", binary, func(t *testing.T) {
			if err := os.Chmod(filepath.Join(demo, "hooks", "post-receive"), 0o640); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"shims again", binary, func(t *testing.T) {
			if err := repos.Configure(ctx, f.root, demo, binary); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(t)
			var argv, env []string
			var files []*os.File
			var late map[string]string
			res := f.run(t, "alice", "git-receive-pack 'demo.git'", func(r *Request) {
				r.Binary = tc.binary
				r.Start = fakeStart(func(_ string, a, e []string, fs []*os.File) (int, error) {
					argv, env, files = a, e, fs
					n, err := strconv.Atoi(hookenv.Getenv(e)(hookenv.HandoffFDVar))
					if err != nil || n != hookenv.LateFD || len(fs) == 0 {
						t.Fatalf("%s in %q with %d files", hookenv.HandoffFDVar, e, len(fs))
					}
					late = hookenv.ReadLate(fs[0].Fd())
					if len(fs) == 5 { // what git would run: the hook script and the gate, and the script's pipes
						for i, name := range map[int]string{1: "collab-hook-script", 2: "collab-post-receive"} {
							link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(fs[i].Fd())))
							if err != nil || !strings.HasPrefix(link, "/memfd:"+name) {
								t.Errorf("fd %d is %q, %v; want %s", 3+i, link, err, name)
							}
						}
						script, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(fs[1].Fd())))
						if err != nil || !strings.HasPrefix(string(script), "#!/bin/sh\n") || !strings.Contains(string(script), binary) {
							t.Errorf("hook script %q, %v; want sh, falling back to collab-hook", script, err)
						}
						for _, fd := range []int{relay.ReqFD, relay.AnsFD} {
							if st, err := fs[fd-3].Stat(); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
								t.Errorf("fd %d: %v, %v; want one of the script relay's pipes", fd, st, err)
							}
						}
					}
					return 0, nil
				})
			})
			if res.code != 0 {
				t.Fatalf("serve: exit %d: %s", res.code, res.stderr)
			}
			named := slices.Contains(argv, hooksPath)
			if named != tc.direct || len(files) != map[bool]int{true: 5, false: 1}[tc.direct] {
				t.Errorf("argv %q with %d files; want direct hooks: %v", argv, len(files), tc.direct)
			}
			// With the gate: the branches it follows (none yet), and git
			// quiet about the hook it skips.
			gated := late[hookenv.PostReceiveVar] == "-" && slices.Contains(argv, "advice.ignoredHook=false")
			if gated != tc.direct {
				t.Errorf("argv %q, hand-off %q: post-receive gate %v, want %v", argv, late, gated, tc.direct)
			}
			// The rest of the hand-off is there either way, and only in
			// the sealed file.
			if late[hookenv.AccessVar] == "" || late[hookenv.LimitsVar] == "" || slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, hookenv.AccessVar+"=") }) {
				t.Errorf("hand-off %q, env %q", late, env)
			}
			// serve runs git's gc --auto itself, after git (Repo.Detach).
			if !slices.Contains(argv, "receive.autogc=false") {
				t.Errorf("argv %q: receive-pack would run gc --auto while the pusher waits", argv)
			}
		})
	}
}

// fakeStart is Request.Start for a fake git that runs whole when serve
// waits for it, after serve's check and the hand-off's seal; one serve
// stopped (a push it refused) never runs.
func fakeStart(run func(path string, argv, env []string, files []*os.File) (int, error)) func(context.Context, string, []string, []string, *os.File, *os.File, []*os.File) (func() (int, error), error) {
	return func(ctx context.Context, path string, argv, env []string, _, _ *os.File, files []*os.File) (func() (int, error), error) {
		return func() (int, error) {
			if ctx.Err() != nil {
				return 128 + 15, nil
			}
			return run(path, argv, env, files)
		}, nil
	}
}

// sameSet compares environments as sets: their order means nothing.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// COLLAB_ACCESS tells pre-receive what serve checked, so it only ever comes
// from serve's own check: one that reached serve's environment (an sshd
// with AcceptEnv COLLAB_*, a client's SetEnv) is dropped, and the level is
// the principal's, for the repository asked for.
func TestAccessComesFromTheCheck(t *testing.T) {
	f := setup(t)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	res := f.run(t, "alice", "git-receive-pack 'demo.git'", func(r *Request) {
		r.Now = func() time.Time { return now }
		r.Environ = append(r.Environ, "COLLAB_ACCESS=admin demo.git 1795946400000", "COLLAB_ACCESS=admin org/pub.git 1795946400000")
	})
	var got []string
	for _, kv := range res.env {
		if strings.HasPrefix(kv, "COLLAB_ACCESS=") {
			got = append(got, kv)
		}
	}
	if want := []string{"COLLAB_ACCESS=write demo.git 1795946400000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("COLLAB_ACCESS %q, want %q", got, want)
	}
	h := hookenv.Decode(func(k string) string {
		for _, kv := range res.env {
			if n, v, _ := strings.Cut(kv, "="); n == k {
				return v
			}
		}
		return ""
	})
	if !h.WriteChecked("demo.git", now) {
		t.Error("pre-receive would not take serve's own check")
	}
	// A reader is refused before git runs, whatever its environment says.
	res = f.run(t, "bob", "git-receive-pack 'demo.git'", func(r *Request) {
		r.Environ = append(r.Environ, "COLLAB_ACCESS=admin demo.git 1795946400000")
	})
	if len(res.execs) != 0 || res.code == 0 {
		t.Errorf("bob: exec %q, exit %d", res.execs, res.code)
	}
}

// serve hands the hooks the branch rules it read with the access check;
// rules from its own environment are dropped like any hand-off variable,
// so a client cannot say "no rules" for a protected branch.
func TestRulesComeFromTheDatabase(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	if err := f.db.Write(ctx, func(tx *sql.Tx) error {
		_, err := branches.Put(ctx, tx, "demo.git", branches.Default("main"), "alice", time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	res := f.run(t, "alice", "git-receive-pack 'demo.git'", func(r *Request) {
		r.Environ = append(r.Environ, "COLLAB_BRANCH_RULES=-")
	})
	var got []string
	for _, kv := range res.env {
		if strings.HasPrefix(kv, "COLLAB_BRANCH_RULES=") {
			got = append(got, kv)
		}
	}
	if want := []string{"COLLAB_BRANCH_RULES=main:none"}; !reflect.DeepEqual(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
	// A fetch needs none.
	res = f.run(t, "alice", "git-upload-pack 'demo.git'", nil)
	if len(res.execs) != 1 {
		t.Fatalf("upload-pack: exec %q, exit %d: %s", res.execs, res.code, res.stderr)
	}
	for _, kv := range res.env {
		if strings.HasPrefix(kv, "COLLAB_BRANCH_RULES=") {
			t.Errorf("upload-pack got %s", kv)
		}
	}
}

// Every hostile or unknown command gets a non-zero exit, exactly one line on
// stderr, and nothing is executed.
func TestHostileCommands(t *testing.T) {
	f := setup(t)
	for _, tc := range []struct {
		who, cmd string
		code     int
		msg      string
	}{
		{"alice", "git-upload-pack '../demo.git'", 2, "bad repository name"},
		{"alice", "git-upload-pack 'org/../demo.git'", 2, "bad repository name"},
		{"alice", "git-upload-pack '//etc/passwd'", 2, "absolute path"},
		{"alice", "git-upload-pack '/srv/collab/repos/demo.git'", 4, "not found"},
		{"alice", "git-upload-pack 'evil.git'", 2, "outside the forge"},
		{"alice", "git-upload-pack '--upload-pack=touch /tmp/pwned'", 2, "bad repository name"},
		{"alice", "git-upload-pack --upload-pack=id demo", 2, "exactly one repository"},
		{"alice", "git-upload-pack -- demo", 2, "exactly one repository"},
		{"alice", "git-upload-pack 'demo' ; touch /tmp/pwned", 2, "shell syntax"},
		{"alice", "git-upload-pack 'demo';id", 2, "shell syntax"},
		{"alice", "git-upload-pack $(touch /tmp/pwned)", 2, "shell syntax"},
		{"alice", "git-upload-pack `id`", 2, "shell syntax"},
		{"alice", "git-upload-pack \"$(id)\"", 2, "shell syntax"},
		{"alice", "git-upload-pack demo | sh", 2, "shell syntax"},
		{"alice", "git-upload-pack demo && sh", 2, "shell syntax"},
		{"alice", "git-upload-pack demo > /tmp/x", 2, "shell syntax"},
		{"alice", "git-upload-pack 'demo'\ntouch /tmp/pwned", 2, "newline"},
		{"alice", "git-upload-pack 'demo\x00x'", 2, "NUL"},
		{"alice", "git-upload-pack 'demo", 2, "unbalanced"},
		{"alice", "git-upload-pack \"demo", 2, "unbalanced"},
		{"alice", "git-upload-pack '" + strings.Repeat("a", 1<<20) + "'", 2, "too long"},
		{"alice", "git-upload-pack ''", 2, "empty"},
		{"alice", "git-upload-pack '/'", 2, "empty"},
		{"alice", "git-upload-pack", 2, "exactly one repository"},
		{"alice", "git-upload-pack demo demo", 2, "exactly one repository"},
		{"alice", "git-upload-pack 'demo\\x'", 2, "backslash"},
		{"alice", "git-upload-pack '.hidden'", 2, "starts with ."},
		{"alice", "git-upload-pack 'demo.git/objects'", 4, "not found"},
		{"alice", "git-upload-pack 'demo\x1b[2J'", 2, "control character"},
		{"alice", "scp -t /tmp", 2, "scp: nothing can be copied to the forge"},
		{"alice", "sh -c id", 2, "unknown command"},
		{"alice", "rsync --server . /", 2, "unknown command"},
		{"alice", "bash", 2, "unknown command"},
		{"alice", "git-shell -c id", 2, "unknown git command"},
		{"alice", "git config core.sshCommand id", 2, "unknown git command"},
		{"alice", "git-upload-pack-evil demo", 2, "unknown git command"},
		{"alice", "git", 2, "unknown git command"},
		// Access: a private repository looks exactly like a missing one.
		{"bob", "git-upload-pack 'secret.git'", 4, "repository secret not found"},
		{"bob", "git-upload-pack 'nothere.git'", 4, "repository nothere not found"},
		{"bob", "git-receive-pack 'demo.git'", 5, "permission denied"},
		{"bob", "git-receive-pack 'org/pub.git'", 5, "permission denied"},
		{"bob", "git-receive-pack 'secret.git'", 4, "repository secret not found"},
		// Principals.
		{"gone", "git-upload-pack 'org/pub.git'", 5, "principal gone is disabled"},
		{"carol", "git-upload-pack 'org/pub.git'", 5, "principal carol does not exist"},
		{"Bad;Name", "whoami", 2, "bad principal name"},
		{"local", "whoami", 2, "reserved"},
	} {
		res := f.run(t, tc.who, tc.cmd, nil)
		name := tc.who + " " + clip(tc.cmd)
		if len(name) > 80 {
			name = name[:80]
		}
		if res.code != tc.code {
			t.Errorf("%q: exit %d, want %d (stderr %q)", name, res.code, tc.code, res.stderr)
		}
		if len(res.execs) != 0 {
			t.Errorf("%q: ran %q", name, res.execs)
		}
		if strings.Count(res.stderr, "\n") != 1 || !strings.HasSuffix(res.stderr, "\n") || !strings.Contains(res.stderr, tc.msg) || len(res.stderr) > 400 {
			t.Errorf("%q: stderr %q, want one line with %q", name, res.stderr, tc.msg)
		}
		if res.stdout != "" {
			t.Errorf("%q: stdout %q", name, res.stdout)
		}
	}
	// The refusals for a private and a missing repository differ only in the name.
	a := f.run(t, "bob", "git-upload-pack secret", nil)
	b := f.run(t, "bob", "git-upload-pack nothere", nil)
	if strings.Replace(a.stderr, "secret", "X", 1) != strings.Replace(b.stderr, "nothere", "X", 1) || a.code != b.code {
		t.Errorf("private %q (%d) differs from missing %q (%d)", a.stderr, a.code, b.stderr, b.code)
	}
}

// With ExposeAuthInfo, serve checks the key sshd used still belongs to the
// principal: a stale authorized_keys line is not enough.
func TestUserAuthKey(t *testing.T) {
	f := setup(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fields := func(k string) string { return strings.Join(strings.Fields(k)[:2], " ") }
	for _, tc := range []struct {
		name, auth string
		code       int
		msg        string
	}{
		{"own key", write("a", "publickey "+fields(aliceKey)+"\n"), 0, ""},
		{"another's key", write("b", "publickey "+fields(bobKey)+"\n"), 5, "no longer belongs to alice"},
		{"no key", write("c", "password\n"), 5, "not authenticated with a public key"},
		{"unreadable", filepath.Join(dir, "missing"), 5, "cannot read"},
	} {
		res := f.run(t, "alice", "whoami", func(r *Request) { r.UserAuth = tc.auth })
		if res.code != tc.code || !strings.Contains(res.stderr, tc.msg) {
			t.Errorf("%s: exit %d stderr %q, want %d %q", tc.name, res.code, res.stderr, tc.code, tc.msg)
		}
	}
	// Removing the key makes the same login fail.
	if _, err := principals.RemoveKey(context.Background(), f.db, f.aliceFP); err != nil {
		t.Fatal(err)
	}
	res := f.run(t, "alice", "whoami", func(r *Request) { r.UserAuth = filepath.Join(dir, "a") })
	if res.code != 5 || !strings.Contains(res.stderr, "no longer belongs to alice") {
		t.Errorf("removed key: exit %d stderr %q", res.code, res.stderr)
	}
}

func TestVerbsAndGreeting(t *testing.T) {
	f := setup(t)
	res := f.run(t, "alice", "", nil)
	if res.code != 0 || !strings.Contains(res.stdout, "hello alice") || !strings.Contains(res.stdout, "write  demo") ||
		!strings.Contains(res.stdout, "read   org/pub") || strings.Contains(res.stdout, "secret") {
		t.Errorf("greeting: exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
	res = f.run(t, "alice", "whoami --json", nil)
	if res.code != 0 || !strings.Contains(res.stdout, `"principal": "alice"`) || !strings.Contains(res.stdout, `"level": "write"`) {
		t.Errorf("whoami: exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
	res = f.run(t, "bob", "repo list", nil)
	if res.code != 0 || res.stdout != "demo\tprivate\tread\t\nevil\tpublic\tread\t\norg/pub\tpublic\tread\t\n" {
		t.Errorf("repo list: exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
	res = f.run(t, "bob", "hooks commit-msg", nil)
	if res.code != 0 || !strings.HasPrefix(res.stdout, "#!") {
		t.Errorf("hooks commit-msg: exit %d stdout %.40q", res.code, res.stdout)
	}
}

func TestVerbRepo(t *testing.T) {
	f := setup(t)
	var out bytes.Buffer
	env, err := verbEnv(context.Background(), &Request{Root: f.root, Principal: "alice", Stdout: &out, Stderr: &out, Log: slog.New(slog.DiscardHandler)}, f.db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	app := verbs.App(env)
	for line, want := range map[string]string{
		"issue new demo --title x":          "demo.git",
		"issue new --title x org/demo":      "org/demo.git",
		"issue new --title=x demo.git":      "demo.git",
		"issue list --json demo":            "demo.git",
		"lease acquire demo abcd --ttl 15m": "demo.git",
		"patch show -- demo abcd":           "demo.git",
		"issue new --title x":               "",
		"issue new ../x --title x":          "",
		"token revoke demo":                 "",
		"whoami":                            "",
		"issue nosuch demo":                 "",
	} {
		words, _ := shellwords.Split(line)
		if got := verbRepo(app, words); got != want {
			t.Errorf("verbRepo(%q) = %q, want %q", line, got, want)
		}
	}
}

// A verb line with --json gets its refusal as JSON on stdout too, even when
// serve itself refuses before any verb runs.
func TestJSONRefusal(t *testing.T) {
	f := setup(t)
	res := f.run(t, "gone", "whoami --json", nil)
	if res.code != 5 || res.stdout != "{\"error\":\"access denied: principal gone is disabled\"}\n" {
		t.Errorf("exit %d stdout %q", res.code, res.stdout)
	}
	res = f.run(t, "gone", "git-upload-pack --json", nil)
	if res.stdout != "" {
		t.Errorf("git command got JSON: %q", res.stdout)
	}
}

func TestWithConfig(t *testing.T) {
	for _, tc := range []struct {
		argv, kv, want []string
	}{
		{[]string{"git", "receive-pack", "d"}, nil, []string{"git", "receive-pack", "d"}},
		{[]string{"git", "receive-pack", "d"}, []string{"a=1"}, []string{"git", "-c", "a=1", "receive-pack", "d"}},
		{[]string{"git", "-c", "a=1", "receive-pack", "d"}, []string{"b=2", "c=3"}, []string{"git", "-c", "b=2", "-c", "c=3", "-c", "a=1", "receive-pack", "d"}},
	} {
		if got := withConfig(tc.argv, tc.kv...); !slices.Equal(got, tc.want) {
			t.Errorf("withConfig(%q, %q) = %q, want %q", tc.argv, tc.kv, got, tc.want)
		}
	}
}

// serve starts receive-pack before its check only for a principal who
// passed it for the repository before (a writer's mark), and starts no git
// at all for anyone refused otherwise; where it started git early, nothing
// passes between git and the client until the check has passed: a
// refused pusher sees none of git's output (its ref advertisement), and
// git none of what the client sent unasked; and git reads the client's
// input only once the hand-off is sealed. Here "git" is a shell that
// writes its advertisement at once and keeps what it reads.
func TestReceivePackHeld(t *testing.T) {
	f := setup(t)
	for _, tc := range []struct {
		name, principal string
		mark            bool // passed the check before
		pass            bool
	}{
		{"first push", "alice", false, true},  // write access: checked, then git
		{"next push", "alice", true, true},    // git beside the check
		{"read only", "bob", false, false},    // no git
		{"read only now", "bob", true, false}, // git stopped unheard
		{"disabled", "gone", true, false},
		{"no such principal", "nobody", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mark {
				if err := noteWriter(f.root, tc.principal, "demo.git"); err != nil {
					t.Fatal(err)
				}
			}
			got := filepath.Join(t.TempDir(), "stdin")
			client := &sealCheck{r: strings.NewReader("0000 blind commands and a pack")}
			var started, stopped bool
			res := f.run(t, tc.principal, "git-receive-pack 'demo.git'", func(r *Request) {
				r.Stdin = client
				r.Start = func(ctx context.Context, _ string, _, _ []string, stdin, stdout *os.File, files []*os.File) (func() (int, error), error) {
					started = true
					client.late = files[len(files)-1]
					cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `echo advertisement; cat > "$1"`, "sh", got)
					cmd.Stdin, cmd.Stdout = stdin, stdout
					if err := cmd.Start(); err != nil {
						return nil, err
					}
					return func() (int, error) {
						err := cmd.Wait()
						stopped = ctx.Err() != nil
						return cmd.ProcessState.ExitCode(), err
					}, nil
				}
			})
			read, _ := os.ReadFile(got)
			if tc.pass {
				if res.code != 0 || res.stdout != "advertisement\n" || string(read) != "0000 blind commands and a pack" || stopped {
					t.Errorf("exit %d, client got %q, git got %q, stopped %v: %s", res.code, res.stdout, read, stopped, res.stderr)
				}
				// serve took the client's input only with the hand-off
				// sealed.
				if h := client.sealed; !strings.HasPrefix(h[hookenv.AccessVar], "write demo.git ") || h[hookenv.RulesVar] == "" {
					t.Errorf("hand-off when serve read the client's input: %q", h)
				}
				if !wroteBefore(f.root, tc.principal, "demo.git") {
					t.Errorf("a push that passed left no writer's mark")
				}
				return
			}
			if res.code == 0 || res.stdout != "" || len(read) != 0 || started != tc.mark || stopped != tc.mark {
				t.Errorf("exit %d, client got %q, git got %q, started %v, stopped %v", res.code, res.stdout, read, started, stopped)
			}
			if !tc.mark && wroteBefore(f.root, tc.principal, "demo.git") {
				t.Errorf("a refused principal was marked a writer")
			}
		})
	}
}

// sealCheck is a client's input that notes the hand-off as serve first
// reads from it.
type sealCheck struct {
	r      io.Reader
	late   *os.File
	read   bool
	sealed map[string]string
}

func (c *sealCheck) Read(p []byte) (int, error) {
	if !c.read {
		c.read, c.sealed = true, hookenv.ReadLate(c.late.Fd())
	}
	return c.r.Read(p)
}

// listen passes nothing while the hand-off is still open: a hook reading
// it then would find no hand-off.
func TestListenOnlySealed(t *testing.T) {
	late, err := hookenv.OpenLate()
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g := &held{in: w}
	if err := g.listen(strings.NewReader("commands"), late); err == nil {
		t.Fatal("listened before the seal")
	}
	if err := late.Seal(nil); err != nil {
		t.Fatal(err)
	}
	if err := g.listen(strings.NewReader("commands"), late); err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(r); string(got) != "commands" {
		t.Errorf("git got %q", got)
	}
}

// A client that is gone stops what git writes, as the client's channel
// itself would: git fails on its next write instead of waiting on a pipe
// nobody reads.
func TestSpeakToNobody(t *testing.T) {
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", "trap '' PIPE; while echo output; do :; done; exit 3")
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	g := &held{out: out, wait: func() (int, error) {
		err := cmd.Wait()
		return cmd.ProcessState.ExitCode(), err
	}, cancel: func() {}}
	g.speak(gone{})
	done := make(chan int)
	go func() {
		code, _, _ := g.finish()
		done <- code
	}()
	select {
	case code := <-done:
		if code != 3 {
			t.Errorf("git exited %d, want its own failure (3)", code)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatal("git still writing for a client that is gone")
	}
}

// gone is a client's channel that is closed.
type gone struct{}

func (gone) Write([]byte) (int, error) { return 0, syscall.EPIPE }
