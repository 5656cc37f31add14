package hookdir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTargetIsFD(t *testing.T) {
	if want := "/proc/self/fd/" + strconv.Itoa(FD); target != want {
		t.Fatalf("target %q, want %q", target, want)
	}
}

var shims = map[string]string{
	"pre-receive":  "#!/bin/sh\nexec pre\n",
	"proc-receive": "#!/bin/sh\nexec proc\n",
	"post-receive": "#!/bin/sh\nexec post\n",
}

// set runs pre-receive and proc-receive directly, post-receive as its shim.
var set = Set{Shims: shims, Direct: map[string]bool{"pre-receive": true, "proc-receive": true}}

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
		{"the root's copy of a shim edited", func(t *testing.T, root, _ string) {
			if err := os.WriteFile(filepath.Join(Dir(root), "post-receive"), []byte(shims["post-receive"]+"#\n"), 0o750); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"the root's copy of a shim a link", func(t *testing.T, root, _ string) {
			p := filepath.Join(Dir(root), "post-receive")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(root, "elsewhere"), p); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "elsewhere"), []byte(shims["post-receive"]), 0o750); err != nil {
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
	// A regular file for a link, a wrong link, a link for a copy, and a
	// leftover of a killed run.
	if err := os.WriteFile(filepath.Join(dir, "pre-receive"), []byte("x"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/true", filepath.Join(dir, "proc-receive")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "post-receive")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "post-receive.new"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // and again: nothing changes
		if err := Install(root, set); err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"pre-receive", "proc-receive"} {
			if got, err := os.Readlink(filepath.Join(dir, h)); err != nil || got != target {
				t.Fatalf("%s: %q, %v", h, got, err)
			}
		}
		p := filepath.Join(dir, "post-receive")
		if st, err := os.Lstat(p); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o100 == 0 || !isShim(p, shims["post-receive"]) {
			t.Fatalf("post-receive is not its shim: %v, %v", st, err)
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
	if err := Install(root, Set{Shims: map[string]string{"pre-receive": ""}, Direct: map[string]bool{"pre-receive": true}}); err != nil {
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
