// Command fence measures what fencing costs a branch push: a push to main
// that carries -o lease=ISSUE:TOKEN and a commit with a Fixes: trailer
// naming that issue (pre-receive reads the lease; post-receive's merge
// record would check it again) against the same push without them, in
// interleaved rounds, each push one new commit. Both go through serve as
// the forced command runs it (GIT_SSH_COMMAND stands in for sshd), so the
// hooks run where they run deployed: the fenced push's pre-receive in
// serve, with the database serve has open. An open patch on main makes the
// merge scan walk every pushed commit in both.
//
// It prints, per run, medians of wall time and of CPU time (user+sys of
// git push and every process it waited for) and their ratio; goal: the
// fenced push's wall median at most 1.05x the plain one's.
//
// With -early it measures serve's early start instead (issue 39): a
// plain push by a principal serve has seen pass the check for the
// repository (git starts beside the check) against the same push with
// that mark removed first (the check, then git), as a stranger's push
// always goes.
//
//	go run ./bench/fence [-n 41] [-runs 2] [-bin collab-hook] [-early]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
)

func main() {
	n := flag.Int("n", 41, "rounds per run (one push of each kind a round)")
	runs := flag.Int("runs", 2, "runs, each on a fresh root")
	bin := flag.String("bin", "", "collab-hook binary to measure (default: build it)")
	early := flag.Bool("early", false, "measure serve's early start of git instead of the fence")
	flag.Parse()
	if err := run(*n, *runs, *bin, *early); err != nil {
		fmt.Fprintln(os.Stderr, "bench/fence:", err)
		os.Exit(1)
	}
}

type sample struct{ wall, cpu time.Duration }

func run(n, runs int, prebuilt string, early bool) error {
	top, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(top, "bench", "out"), 0o755); err != nil {
		return err
	}
	w, err := os.MkdirTemp(filepath.Join(top, "bench", "out"), "fence.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(w)
	bin := prebuilt
	if bin == "" {
		if bin, err = build.Hook(w); err != nil {
			return err
		}
	} else if bin, err = filepath.Abs(bin); err != nil {
		return err
	}
	if early {
		fmt.Printf("bench/fence -early: a branch push with git started beside serve's access check vs after it, through serve; %d interleaved rounds per run, medians\n", n)
	} else {
		fmt.Printf("bench/fence: a branch push with -o lease=ISSUE:TOKEN and a Fixes: trailer vs the same push without them, through serve; %d interleaved rounds per run, medians\n", n)
	}
	for r := 1; r <= runs; r++ {
		line, err := oneRun(filepath.Join(w, fmt.Sprint("run", r)), bin, n, early)
		if err != nil {
			return err
		}
		fmt.Printf("run %d: %s\n", r, line)
	}
	return nil
}

func oneRun(w, bin string, n int, early bool) (string, error) {
	home, root, work := filepath.Join(w, "home"), filepath.Join(w, "root"), filepath.Join(w, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=b@e", "GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=b@e"}
	standin := filepath.Join(w, "standin")
	script := fmt.Sprintf("#!/bin/sh\nfor last; do :; done\nSSH_ORIGINAL_COMMAND=$last exec %s --root %s serve --as bench\n", bin, root)
	if err := os.WriteFile(standin, []byte(script), 0o755); err != nil {
		return "", err
	}
	sshEnv := append(slices.Clone(env), "GIT_SSH_COMMAND="+standin, "GIT_SSH_VARIANT=ssh")
	sh := func(dir string, env []string, name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	verb := func(line string) (string, error) {
		cmd := exec.Command(bin, "--root", root, "serve", "--as", "bench")
		cmd.Env = append(slices.Clone(env), "SSH_ORIGINAL_COMMAND="+line)
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("%s: %w", line, err)
		}
		return string(out), nil
	}
	for _, s := range [][]string{
		{bin, "--root", root, "init", "--url", "http://bench.test"},
		{bin, "--root", root, "repo", "create", "demo"},
		{bin, "--root", root, "user", "add", "bench"},
		{bin, "--root", root, "grant", "bench", "demo", "write"},
		{"git", "init", "-q", "-b", "main", work},
	} {
		if _, err := sh(w, env, s[0], s[1:]...); err != nil {
			return "", err
		}
	}
	remote := "ssh://local/demo.git"
	for _, s := range [][]string{
		{"commit", "-q", "--allow-empty", "-m", "init"},
		{"push", "-q", remote, "HEAD:main"},
		{"checkout", "-q", "-b", "review"},
		{"commit", "-q", "--allow-empty", "-m", "Open patch", "-m", "Patch: 00000000000000000000000000000000000000aa"},
		{"push", "-q", remote, "HEAD:refs/for/main"},
		{"checkout", "-q", "main"},
	} {
		if _, err := sh(work, sshEnv, "git", s...); err != nil {
			return "", err
		}
	}
	out, err := verb("issue new demo --title fenced --json")
	if err != nil {
		return "", err
	}
	var is struct{ ID string }
	if err := json.Unmarshal([]byte(out), &is); err != nil {
		return "", err
	}
	if out, err = verb("lease acquire demo " + is.ID + " --json"); err != nil {
		return "", err
	}
	var l struct{ Token int64 }
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		return "", err
	}
	push := func(opts ...string) (sample, error) {
		cmd := exec.Command("git", append(append([]string{"push", "-q"}, opts...), remote, "HEAD:main")...)
		cmd.Dir, cmd.Env = work, sshEnv
		var errb bytes.Buffer
		cmd.Stderr = &errb
		t0 := time.Now()
		err := cmd.Run()
		wall := time.Since(t0)
		if err != nil {
			return sample{}, fmt.Errorf("push %v: %v: %s", opts, err, errb.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return sample{wall, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}, nil
	}
	var plain, fenced []sample
	for i := 0; i < n; i++ {
		order := []bool{true, false}
		if i%2 == 1 {
			order = []bool{false, true}
		}
		for _, isFenced := range order {
			msg := []string{"commit", "-q", "--allow-empty", "-m", fmt.Sprint("round ", i)}
			var opts []string
			if early && isFenced {
				// serve's marks of who passed its check (internal/serve).
				if err := os.RemoveAll(filepath.Join(root, "collab.db.writers")); err != nil {
					return "", err
				}
			} else if isFenced {
				msg = append(msg, "-m", "Fixes: "+is.ID)
				opts = []string{"-o", fmt.Sprintf("lease=%s:%d", is.ID, l.Token)}
			}
			if _, err := sh(work, env, "git", msg...); err != nil {
				return "", err
			}
			s, err := push(opts...)
			if err != nil {
				return "", err
			}
			if isFenced {
				fenced = append(fenced, s)
			} else {
				plain = append(plain, s)
			}
		}
	}
	pw, fw := median(plain, false), median(fenced, false)
	pc, fc := median(plain, true), median(fenced, true)
	if early {
		return fmt.Sprintf("wall: early %6.2f ms  checked first %6.2f ms  ratio %.3fx | cpu: early %6.2f ms  checked first %6.2f ms  ratio %.3fx",
			ms(pw), ms(fw), float64(fw)/float64(pw), ms(pc), ms(fc), float64(fc)/float64(pc)), nil
	}
	return fmt.Sprintf("wall: plain %6.2f ms  fenced %6.2f ms  ratio %.3fx | cpu: plain %6.2f ms  fenced %6.2f ms  ratio %.3fx | goal wall ratio <= 1.05x",
		ms(pw), ms(fw), float64(fw)/float64(pw), ms(pc), ms(fc), float64(fc)/float64(pc)), nil
}

func median(s []sample, cpu bool) time.Duration {
	v := make([]time.Duration, len(s))
	for i, x := range s {
		v[i] = x.wall
		if cpu {
			v[i] = x.cpu
		}
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
