package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

// startup measures what starting the hook binaries costs next to an empty
// static Go binary (package main; func main() {}), interleaved, n rounds:
// collab-hook-fast (what the pre-receive shim and install.sh's
// AuthorizedKeysCommand run) deciding a branch update that serve's stamp
// covers (also as git runs it from ROOT/hooks, internal/hookdir),
// answering keys-command from the key index, each its whole work,
// and handing post-receive to serve (the relay: here a stand-in in this
// process that answers at once, so only the hook's own cost counts); then
// collab-hook (SQLite linked) doing the same, a post-receive with
// nothing to do and serve refusing a malformed principal before it opens
// anything. Goal: <= 1.5x. A program that only links modernc.org/sqlite
// (./sqlitefloor) shows the floor under any process that opens the
// database, serve among them.
// It also prints collab-hook's package inits (GODEBUG=inittrace=1).
func startup(w, bin, root, repo string, env []string, n int) ([]string, error) {
	empty := filepath.Join(w, "empty")
	src := filepath.Join(w, "empty.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		return nil, err
	}
	floor := filepath.Join(w, "sqlitefloor")
	for _, b := range [][2]string{{empty, src}, {floor, "github.com/collab-forge/collab/bench/push/sqlitefloor"}} {
		build := exec.Command("go", "build", "-o", b[0], b[1])
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build %s: %v: %s", filepath.Base(b[0]), err, out)
		}
	}
	keyFile := filepath.Join(w, "id_startup")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", keyFile).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ssh-keygen: %v: %s", err, out)
	}
	pub, err := os.ReadFile(keyFile + ".pub")
	if err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"user", "add", "startup"}, {"key", "add", "startup", keyFile + ".pub"}} {
		if out, err := exec.Command(bin, append([]string{"--root", root}, args...)...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	key := strings.Fields(string(pub))
	head, err := exec.Command("git", "--git-dir", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		return nil, fmt.Errorf("rev-parse: %w", err)
	}
	oid := strings.TrimSpace(string(head))
	type proc struct {
		name  string
		args  []string
		stdin string
		env   func() []string
		files []*os.File
	}
	base := append(env, "GIT_DIR="+repo)
	fast := filepath.Join(filepath.Dir(bin), "collab-hook-fast")
	lim := pushlimit.Defaults()
	// serve's hand-off for a push to a repository without branch rules
	// (with one, the check asks git whether the branch is a symbolic ref).
	stamped := func() []string {
		h := hookenv.Handoff{Principal: "startup", Root: root, Checked: hookenv.Check{Level: access.Write, Repo: "demo.git", At: time.Now()},
			Limits: &lim, Rules: map[string]pushcheck.Rule{}}
		return append(base, h.Encode()...)
	}
	update := oid + " " + oid + " refs/heads/startup\n"
	procs := []proc{
		{"empty static Go binary", []string{empty}, "", nil, nil},
		{"empty, linking modernc.org/sqlite", []string{floor}, "", nil, nil},
		{"collab-hook-fast keys-command (key index)", []string{fast, "--root", root, "keys-command", "git", key[0], key[1]}, "", nil, nil},
		{"collab-hook hook post-receive, nothing to do", []string{bin, "--root", root, "hook", "post-receive"}, "", nil, nil},
		{"collab-hook hook pre-receive, stamped", []string{bin, "--root", root, "hook", "pre-receive"}, update, stamped, nil},
		{"collab-hook keys-command (key index)", []string{bin, "--root", root, "keys-command", "git", key[0], key[1]}, "", nil, nil},
		{"collab-hook serve refusing a bad principal", []string{bin, "--root", root, "serve", "--as", "Bad"}, "", func() []string {
			return append(base, "SSH_ORIGINAL_COMMAND=whoami")
		}, nil},
	}
	samples := make([][]sample, len(procs))
	// A start is 1-5 ms: many rounds cost little and steady the medians.
	n = max(n, 201)
	for i := 0; i < n; i++ {
		for j := range procs {
			k := (i + j) % len(procs) // rotate who goes first
			p := procs[k]
			cmd := exec.Command(p.args[0], p.args[1:]...)
			cmd.Dir = repo
			cmd.Env = base
			if p.env != nil {
				cmd.Env = p.env()
			}
			cmd.Stdin = strings.NewReader(p.stdin)
			cmd.ExtraFiles = p.files
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			t0 := time.Now()
			err := cmd.Run()
			wall := time.Since(t0)
			if err != nil && k != len(procs)-1 { // serve is meant to refuse
				return nil, fmt.Errorf("%s: %v: %s", p.name, err, out.String())
			}
			if strings.Contains(p.name, "keys-command") && !strings.Contains(out.String(), "serve --as startup") {
				return nil, fmt.Errorf("keys-command printed %q", out.String())
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			samples[k] = append(samples[k], sample{wall, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())})
		}
	}
	lines := []string{fmt.Sprintf("process start-up, %d interleaved rounds, medians   wall ms  ratio |  cpu ms  ratio | goal <= 1.5x", n)}
	ew, ec := median(samples[0], false), median(samples[0], true)
	for k, p := range procs {
		wv, cv := median(samples[k], false), median(samples[k], true)
		lines = append(lines, fmt.Sprintf("  %-40s %8.2f  %5.2fx | %7.2f  %5.2fx", p.name, ms(wv), float64(wv)/float64(ew), ms(cv), float64(cv)/float64(ec)))
	}
	// Package inits of one run of each binary.
	for _, b := range []string{bin, fast} {
		cmd := exec.Command(b, "--root", root, "keys-command", "git", key[0], key[1])
		cmd.Dir, cmd.Env = repo, append(base, "GODEBUG=inittrace=1")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("inittrace: %v: %s", err, errb.String())
		}
		count, clock, heavy := 0, 0.0, []string{}
		for _, l := range strings.Split(errb.String(), "\n") {
			f := strings.Fields(l)
			if len(f) < 6 || f[0] != "init" {
				continue
			}
			count++
			v, _ := strconv.ParseFloat(f[4], 64)
			clock += v
			if v >= 0.02 {
				heavy = append(heavy, fmt.Sprintf("%s %.3f", f[1], v))
			}
		}
		lines = append(lines, fmt.Sprintf("  %s package inits: %d, %.2f ms (>= 0.02 ms: %s)", filepath.Base(b), count, clock, strings.Join(heavy, ", ")))
	}
	return lines, nil
}
