// Command limits measures what issue 14's refusals cost the server, in one
// run, interleaved, medians of wall and CPU time (user+sys of the command
// and every process it waited for):
//
//   - a push of 1,001 refs/for refs (one new commit each round) refused
//     whole by pre-receive's push_max_for_refs, against the same push into
//     a hookless bare repository that stores the refs (the floor; before
//     the limit, such a push made 1,000 patches in 78 s);
//   - an SSH verb's write refused by the rate limit (exit 6), against the
//     same write accepted and a read (issue list), each through
//     collab-hook serve as sshd runs it (no ssh itself).
//
// Local-path pushes name their principal with COLLAB_PRINCIPAL (the
// operator's own pushes are not limited).
//
//	go run ./bench/limits [-n 21]
package main

import (
	"bytes"
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
	n := flag.Int("n", 21, "rounds of each measurement")
	flag.Parse()
	if err := run(*n); err != nil {
		fmt.Fprintln(os.Stderr, "bench/limits:", err)
		os.Exit(1)
	}
}

type sample struct{ wall, cpu time.Duration }

// timed runs cmd and returns its wall time, its CPU time and its exit code.
func timed(cmd *exec.Cmd) (sample, int, string, error) {
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errb, &errb
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if cmd.ProcessState == nil {
		return sample{}, -1, errb.String(), err
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{wall, time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}, cmd.ProcessState.ExitCode(), errb.String(), nil
}

func median(ss []sample) sample {
	w := make([]time.Duration, len(ss))
	c := make([]time.Duration, len(ss))
	for i, s := range ss {
		w[i], c[i] = s.wall, s.cpu
	}
	slices.Sort(w)
	slices.Sort(c)
	return sample{w[len(w)/2], c[len(c)/2]}
}

func run(n int) error {
	top, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(top, "bench", "out"), 0o755); err != nil {
		return err
	}
	w, err := os.MkdirTemp(filepath.Join(top, "bench", "out"), "limits.")
	if err != nil {
		return err
	}
	defer os.RemoveAll(w)
	bin, err := build.Hook(w)
	if err != nil {
		return err
	}
	root, work, plain := filepath.Join(w, "root"), filepath.Join(w, "work"), filepath.Join(w, "plain.git")
	home := filepath.Join(w, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=b@e", "GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=b@e"}
	sh := func(dir string, extra []string, name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, append(append([]string{}, env...), extra...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	admin := func(args ...string) error { return sh(w, nil, bin, append([]string{"--root", root}, args...)...) }
	if err := admin("init", "--url", "http://bench.test"); err != nil {
		return err
	}
	if err := admin("repo", "create", "demo", "--public"); err != nil {
		return err
	}
	users := []string{"ada"}
	for i := range n {
		users = append(users, fmt.Sprintf("u%d", i))
	}
	for _, u := range users {
		if err := admin("user", "add", u); err != nil {
			return err
		}
		if err := admin("grant", u, "demo", "write"); err != nil {
			return err
		}
	}
	for _, s := range [][]string{
		{"git", "init", "-q", "--bare", plain},
		{"git", "init", "-q", "-b", "main", work},
		{"git", "-C", work, "commit", "-q", "--allow-empty", "-m", "init"},
		{"git", "-C", work, "push", "-q", filepath.Join(root, "repos", "demo.git"), "HEAD:main"},
		{"git", "-C", work, "push", "-q", plain, "HEAD:main"},
	} {
		if err := sh(w, nil, s[0], s[1:]...); err != nil {
			return err
		}
	}

	// 1,001 refs/for refs in one push: refused vs stored by a bare repository.
	specs := make([]string, 1001)
	for i := range specs {
		specs[i] = fmt.Sprintf("+HEAD:refs/for/t%d", i+1)
	}
	asAda := []string{"COLLAB_PRINCIPAL=ada"}
	var refused, stored []sample
	for i := range n {
		if err := sh(work, nil, "git", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("change %d", i)); err != nil {
			return err
		}
		for _, dest := range []string{filepath.Join(root, "repos", "demo.git"), plain} {
			cmd := exec.Command("git", append([]string{"push", "-q", dest}, specs...)...)
			cmd.Dir, cmd.Env = work, append(append([]string{}, env...), asAda...)
			s, code, out, err := timed(cmd)
			if err != nil && code < 0 {
				return err
			}
			switch {
			case dest == plain && code != 0:
				return fmt.Errorf("push into the bare repository: exit %d: %s", code, out)
			case dest == plain:
				stored = append(stored, s)
			case code == 0 || !strings.Contains(out, "1001 refs/for refs in one push"):
				return fmt.Errorf("1,001 refs/for refs not refused: exit %d: %s", code, out)
			default:
				refused = append(refused, s)
			}
		}
	}

	// A write refused by the rate limit vs one accepted, and a read.
	if err := admin("config", "set", "rate_burst", "5"); err != nil {
		return err
	}
	if err := admin("config", "set", "rate_refill", "0.001"); err != nil {
		return err
	}
	serve := func(who, words string) (sample, int, string, error) {
		cmd := exec.Command(bin, "--root", root, "serve", "--as", who)
		cmd.Dir, cmd.Env = w, append(append([]string{}, env...), "SSH_ORIGINAL_COMMAND="+words)
		return timed(cmd)
	}
	for range 5 {
		if _, code, out, err := serve("ada", "issue new demo --title spend"); err != nil || code != 0 {
			return fmt.Errorf("spending ada's burst: exit %d %v: %s", code, err, out)
		}
	}
	var limited, accepted, read []sample
	for i := range n {
		for _, m := range []struct {
			who, words string
			code       int
			into       *[]sample
		}{
			{"ada", "issue new demo --title refused", 6, &limited},
			{users[i+1], "issue new demo --title accepted", 0, &accepted},
			{"ada", "issue list demo --limit 10", 0, &read},
		} {
			s, code, out, err := serve(m.who, m.words)
			if err != nil && code < 0 {
				return err
			}
			if code != m.code {
				return fmt.Errorf("%s as %s: exit %d, want %d: %s", m.words, m.who, code, m.code, out)
			}
			*m.into = append(*m.into, s)
		}
	}

	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	line := func(name string, s, base sample) {
		fmt.Printf("  %-48s wall %9s  cpu %9s   (%.2fx / %.2fx)\n", name, ms(s.wall), ms(s.cpu),
			float64(s.wall)/float64(base.wall), float64(s.cpu)/float64(base.cpu))
	}
	fmt.Printf("medians of %d interleaved rounds\n", n)
	fmt.Println("1,001 refs/for refs in one push (ratio to the bare repository):")
	st := median(stored)
	line("bare repository, no hooks (stores them)", st, st)
	line("collab: refused by push_max_for_refs", median(refused), st)
	fmt.Println("an SSH verb through collab-hook serve (ratio to the accepted write):")
	acc := median(accepted)
	line("issue new, accepted", acc, acc)
	line("issue new, refused by the rate limit (exit 6)", median(limited), acc)
	line("issue list (a read, never counted)", median(read), acc)
	return nil
}
