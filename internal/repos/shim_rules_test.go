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

// Where collab-hook-fast lies beside collab-hook (an executable file), the
// pre-receive shim execs it and nothing else does; without it, or where it
// cannot run, every shim execs collab-hook.
func TestShimFastBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "collab-hook")
	fast := filepath.Join(dir, FastBinary)
	execs := func(hook string) string {
		for _, l := range strings.Split(Shim(bin, "/srv/collab", hook), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[0] == "exec" {
				return f[1]
			}
		}
		return ""
	}
	if got := execs("pre-receive"); got != bin {
		t.Fatalf("without collab-hook-fast, pre-receive execs %s", got)
	}
	if err := os.WriteFile(fast, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := execs("pre-receive"); got != bin {
		t.Fatalf("with a collab-hook-fast that cannot run, pre-receive execs %s", got)
	}
	if err := os.Chmod(fast, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := execs("pre-receive"); got != fast {
		t.Fatalf("pre-receive execs %s, want %s", got, fast)
	}
	for _, h := range []string{"proc-receive", "post-receive"} {
		if !strings.Contains(Shim(bin, "/srv/collab", h), bin+" --root") {
			t.Errorf("%s shim does not exec collab-hook:\n%s", h, Shim(bin, "/srv/collab", h))
		}
	}
}
