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

// The pre-receive shim runs collab-hook-fast where it lies beside
// collab-hook and can run, with the same arguments and git's lines, and
// collab-hook otherwise; no other shim runs it.
func TestShimFastBinary(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	stub := func(name string) string {
		return "#!/bin/sh\nprintf '" + name + " %s\\n' \"$*\" > " + rec + "\ncat >> " + rec + "\n"
	}
	bin := filepath.Join(dir, "collab-hook")
	fast := filepath.Join(dir, FastBinary)
	if err := os.WriteFile(bin, []byte(stub("full")), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "pre-receive")
	if err := os.WriteFile(shim, []byte(Shim(bin, "/srv/collab", "pre-receive")), 0o755); err != nil {
		t.Fatal(err)
	}
	const in = "1111111111111111111111111111111111111111 2222222222222222222222222222222222222222 refs/heads/main\n"
	runs := func() string {
		t.Helper()
		cmd := exec.Command("/bin/sh", shim)
		cmd.Stdin = strings.NewReader(in)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("shim: %v: %s", err, out)
		}
		got, err := os.ReadFile(rec)
		if err != nil {
			t.Fatal(err)
		}
		return string(got)
	}
	if got := runs(); got != "full --root /srv/collab hook pre-receive\n"+in {
		t.Fatalf("without collab-hook-fast: %q", got)
	}
	if err := os.WriteFile(fast, []byte(stub("fast")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := runs(); !strings.HasPrefix(got, "full ") {
		t.Fatalf("with a collab-hook-fast that cannot run: %q", got)
	}
	if err := os.Chmod(fast, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := runs(); got != "fast --root /srv/collab hook pre-receive\n"+in {
		t.Fatalf("with collab-hook-fast: %q", got)
	}
	for _, h := range []string{"proc-receive", "post-receive"} {
		if strings.Contains(Shim(bin, "/srv/collab", h), FastBinary) {
			t.Errorf("%s shim runs collab-hook-fast:\n%s", h, Shim(bin, "/srv/collab", h))
		}
	}
}
