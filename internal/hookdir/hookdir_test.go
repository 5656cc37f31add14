package hookdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/hookenv"
)

func TestTargetsAreFDs(t *testing.T) {
	if want := "/proc/self/fd/" + strconv.Itoa(FD); Script != want {
		t.Fatalf("Script %q, want %q", Script, want)
	}
	if want := "/proc/self/fd/" + strconv.Itoa(hookenv.GateFD); Gate != want {
		t.Fatalf("Gate %q, want %q", Gate, want)
	}
}

var shims = map[string]string{
	"pre-receive":  "#!/bin/sh\nexec pre\n",
	"proc-receive": "#!/bin/sh\nexec proc\n",
	"post-receive": "#!/bin/sh\nexec post\n",
}

// set runs pre-receive and proc-receive directly, post-receive through
// the gate.
var set = Set{Shims: shims, Links: map[string]string{"pre-receive": Script, "proc-receive": Script, "post-receive": Gate}}

// setup makes a root with Dir installed and a repository whose hooks are
// the shims, beside git's samples.
func setup(t *testing.T) (root, repo string) {
	t.Helper()
	root, repo = t.TempDir(), t.TempDir()
	if err := Install(root, set); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(repo, "hooks")
	if err := os.Mkdir(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	for h, text := range shims {
		if err := os.WriteFile(filepath.Join(hooks, h), []byte(text), 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(hooks, "update.sample"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root, repo
}

func TestUsable(t *testing.T) {
	write := func(name, text string, mode os.FileMode) func(t *testing.T, root, repo string) {
		return func(t *testing.T, root, repo string) {
			p := filepath.Join(repo, "hooks", name)
			_ = os.Remove(p)
			if err := os.WriteFile(p, []byte(text), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root, repo string)
		want   bool
	}{
		{"the shims as written", func(*testing.T, string, string) {}, true},
		{"a shim not executable (git would skip it)", write("post-receive", shims["post-receive"], 0o640), false},
		{"a shim edited", write("pre-receive", shims["pre-receive"]+"echo\n", 0o750), false},
		{"a shim shortened", write("pre-receive", "#!/bin/sh\n", 0o750), false},
		{"a shim missing", func(t *testing.T, _, repo string) {
			if err := os.Remove(filepath.Join(repo, "hooks", "proc-receive")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a shim that is a directory", func(t *testing.T, _, repo string) {
			p := filepath.Join(repo, "hooks", "post-receive")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a shim that is a symlink to the same text", func(t *testing.T, _, repo string) {
			p := filepath.Join(repo, "hooks", "post-receive")
			other := filepath.Join(repo, "elsewhere")
			if err := os.WriteFile(other, []byte(shims["post-receive"]), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(other, p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"another hook of the operator's", write("update", "#!/bin/sh\nexit 1\n", 0o750), false},
		{"another file, even not executable", write("notes", "x", 0o640), false},
		{"no hooks directory in the root", func(t *testing.T, root, _ string) {
			if err := os.RemoveAll(Dir(root)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a root hook leading elsewhere", func(t *testing.T, root, _ string) {
			p := filepath.Join(Dir(root), "proc-receive")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/bin/true", p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the root's post-receive leading to the program, not the gate", func(t *testing.T, root, _ string) {
			p := filepath.Join(Dir(root), "post-receive")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(Script, p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the root's post-receive a copy of its shim (an older install)", func(t *testing.T, root, _ string) {
			p := filepath.Join(Dir(root), "post-receive")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(shims["post-receive"]), 0o750); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, repo := setup(t)
			tc.change(t, root, repo)
			if got := Usable(root, repo, set); got != tc.want {
				t.Fatalf("Usable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInstallRepairs(t *testing.T) {
	root := t.TempDir()
	dir := Dir(root)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	// A regular file for a link, a wrong link, a copy of the shim (an
	// older install), and a leftover of a killed run.
	if err := os.WriteFile(filepath.Join(dir, "pre-receive"), []byte("x"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/true", filepath.Join(dir, "proc-receive")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "post-receive"), []byte(shims["post-receive"]), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "post-receive.new"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // and again: nothing changes
		if err := Install(root, set); err != nil {
			t.Fatal(err)
		}
		for h, want := range set.Links {
			if got, err := os.Readlink(filepath.Join(dir, h)); err != nil || got != want {
				t.Fatalf("%s: %q, %v; want %q", h, got, err, want)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, "post-receive.new")); !os.IsNotExist(err) {
			t.Fatalf("leftover still there: %v", err)
		}
	}
}

// TestHookRunsInheritedFile runs git with core.hooksPath at Dir and a
// hook program as fd FD: git runs that program, named by the hook, and
// without the fd the hook is not run at all (which is why only serve,
// with the fd in place, names the directory).
func TestHookRunsInheritedFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	if err := Install(root, Set{Shims: map[string]string{"pre-receive": ""}, Links: map[string]string{"pre-receive": Script}}); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "declines")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"declined by $(basename \"$0\")\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "r.git")
	work := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "--bare", repo},
		{"-C", work, "init", "-q"},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	// --receive-pack runs through sh, which opens the program as fd 4 for git.
	push := func(rp string) (string, error) {
		out, err := exec.Command("git", "-C", work, "push", repo, "HEAD:refs/heads/main", "--receive-pack="+rp).CombinedOutput()
		return string(out), err
	}
	out, err := push("git -c core.hooksPath=" + Dir(root) + " receive-pack 4<" + prog)
	if err == nil || !strings.Contains(out, "declined by pre-receive") {
		t.Fatalf("with the fd: the hook did not run and decline: %v\n%s", err, out)
	}
	out, err = push("git -c core.hooksPath=" + Dir(root) + " receive-pack")
	if err != nil || strings.Contains(out, "declined") {
		t.Fatalf("without the fd: %v\n%s", err, out)
	}
}

// TestGate runs git as serve does: core.hooksPath at Dir, the program as
// fd FD and a post-receive gate as fd GateFD. Through the open gate git
// runs the program as post-receive, with the hook's path; once pre-receive
// has shut it, git skips post-receive and says nothing of it.
func TestGate(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	if err := Install(root, set); err != nil {
		t.Fatal(err)
	}
	// The program: as pre-receive it shuts the gate where SHUT is set, as
	// the other hooks it says what it ran as.
	prog := filepath.Join(t.TempDir(), "prog")
	text := `#!/bin/sh
case "$0 $*" in
*pre-receive*) [ -n "$SHUT" ] && chmod 600 /proc/self/fd/5 ;;
*) echo "ran as: $*" >&2 ;;
esac
cat >/dev/null
exit 0
`
	if err := os.WriteFile(prog, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "r.git")
	work := t.TempDir()
	git := func(env []string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"init", "-q", "--bare", repo},
		{"-C", work, "init", "-q"},
	} {
		if out, err := git(nil, args...); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	for _, tc := range []struct {
		shut bool
		want bool
	}{{false, true}, {true, false}, {false, true}} {
		gate, err := hookenv.OpenGate([]byte(fmt.Sprintf("#!/proc/self/fd/%d\n", FD)))
		if err != nil {
			t.Fatal(err)
		}
		if out, err := git(nil, "-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"); err != nil {
			t.Fatalf("commit: %v: %s", err, out)
		}
		// --receive-pack runs through sh, which opens the program and the
		// gate (through this process's fd) for git.
		rp := fmt.Sprintf("git -c core.hooksPath=%s -c advice.ignoredHook=false receive-pack 4<%s 5</proc/%d/fd/%d", Dir(root), prog, os.Getpid(), gate.Fd())
		var env []string
		if tc.shut {
			env = []string{"SHUT=1"}
		}
		out, err := git(env, "-C", work, "push", repo, "HEAD:refs/heads/main", "--receive-pack="+rp)
		gate.Close()
		if err != nil {
			t.Fatalf("shut %v: push: %v\n%s", tc.shut, err, out)
		}
		ran := strings.Contains(out, "ran as: "+filepath.Join(Dir(root), "post-receive"))
		if ran != tc.want || strings.Contains(out, "ignored") {
			t.Fatalf("shut %v: post-receive ran %v, want %v:\n%s", tc.shut, ran, tc.want, out)
		}
	}
}

// TestGateDown: each way git cannot run the gate is named; a shim whose
// binary is there and an operator's own hook are not down.
func TestGateDown(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "collab-hook")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := func(b string) string {
		return "#!/bin/sh\n# Installed by collab; rewritten by \"collab-hook fsck\". Do not edit.\nexec '" + b + "' --root /r hook pre-receive\n"
	}
	for _, tc := range []struct {
		name, body string
		mode       os.FileMode
		want       string
	}{
		{"shim", shim(bin), 0o750, ""},
		{"operator's hook", "#!/bin/sh\nexit 0\n", 0o750, ""},
		{"not executable", shim(bin), 0o640, "hook pre-receive is not executable (mode -rw-r-----)"},
		{"binary gone", shim("/nonexistent/collab-hook"), 0o750, "hook pre-receive runs /nonexistent/collab-hook, which is gone"},
		{"missing", "", 0, "hook pre-receive is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			if err := os.MkdirAll(filepath.Join(repo, "hooks"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.mode != 0 {
				p := filepath.Join(repo, "hooks", GateHook)
				if err := os.WriteFile(p, []byte(tc.body), tc.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			why, since := GateDown(repo)
			if why != tc.want || (why != "") == since.IsZero() {
				t.Errorf("GateDown = %q, %v; want %q", why, since, tc.want)
			}
		})
	}
}
