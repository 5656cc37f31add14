package repos

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Branch rules are enforced by collab-hook's pre-receive: whatever the
// shims learn to skip, the pre-receive shim must start it for every push
// that touches refs/heads/, with git's lines unchanged.
func TestPreReceiveShimAlwaysChecksBranches(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	bin := filepath.Join(dir, "collab-hook")
	stub := "#!/bin/sh\nprintf '%s\\n' \"$*\" > " + rec + ".args\ncat > " + rec + ".in\n"
	if err := os.WriteFile(bin, []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "pre-receive")
	if err := os.WriteFile(shim, []byte(Shim(bin, "/srv/collab", "pre-receive")), 0o755); err != nil {
		t.Fatal(err)
	}
	const z, a, b = "0000000000000000000000000000000000000000", "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	for name, in := range map[string]string{
		"fast-forward": a + " " + b + " refs/heads/main\n",
		"force push":   b + " " + a + " refs/heads/main\n",
		"delete":       a + " " + z + " refs/heads/main\n",
		"create":       z + " " + a + " refs/heads/main\n",
		"mixed":        z + " " + a + " refs/for/main\n" + a + " " + b + " refs/heads/main\n",
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(rec + ".args")
			os.Remove(rec + ".in")
			cmd := exec.Command("/bin/sh", shim)
			cmd.Stdin = strings.NewReader(in)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("shim: %v: %s", err, out)
			}
			args, err := os.ReadFile(rec + ".args")
			if err != nil {
				t.Fatal("the pre-receive shim did not start collab-hook for a branch update: branch rules would be bypassed")
			}
			if !strings.HasSuffix(strings.TrimSpace(string(args)), "hook pre-receive") {
				t.Fatalf("args %q", args)
			}
			if got, _ := os.ReadFile(rec + ".in"); string(got) != in {
				t.Fatalf("collab-hook read %q, want %q", got, in)
			}
		})
	}
}

// Every shim runs collab-hook, with the same arguments and git's lines,
// whatever a client or an old serve left in the environment (the socket
// relay's COLLAB_HOOK_FD, which older shims followed).
func TestShimRunsCollabHook(t *testing.T) {
	const in = "1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 refs/heads/main\n"
	for _, hook := range []string{"pre-receive", "proc-receive", "post-receive"} {
		for _, fd := range []string{"", "3"} {
			t.Run(hook+"/"+fd, func(t *testing.T) {
				dir := t.TempDir()
				rec := filepath.Join(dir, "rec")
				stub := "#!/bin/sh\nprintf 'full %s\\n' \"$*\" > " + rec + "\ncat >> " + rec + "\n"
				bin := filepath.Join(dir, "collab-hook")
				if err := os.WriteFile(bin, []byte(stub), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "collab-hook-fast"), []byte("#!/bin/sh\nexit 9\n"), 0o755); err != nil {
					t.Fatal(err)
				}
				shim := filepath.Join(dir, hook)
				if err := os.WriteFile(shim, []byte(Shim(bin, "/srv/collab", hook)), 0o755); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command("/bin/sh", shim)
				cmd.Env = append(os.Environ(), "COLLAB_HOOK_FD="+fd)
				cmd.Stdin = strings.NewReader(in)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("shim: %v: %s", err, out)
				}
				got, err := os.ReadFile(rec)
				if err != nil {
					t.Fatal(err)
				}
				want := "full --root /srv/collab hook " + hook + "\n" + in
				// post-receive's here-document ends with one empty line.
				if g := strings.TrimSuffix(string(got), "\n"); string(got) != want && g != want {
					t.Errorf("ran %q, want %q", got, want)
				}
			})
		}
	}
}
