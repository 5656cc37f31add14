// Command builds compares two builds of collab pushing through serve
// without ssh, in one run: each build serves a root of its own, with its
// collab-web running beside it as deployed, and a stand-in transport
// (GIT_SSH_COMMAND) does what sshd does with the forced command, as in
// bench/ssh.sh's part 3; a hookless bare repository reached through sh is
// the floor. Round by round, in rotating order: a one-commit branch push
// into each build's repository (with an open patch on main, so the merge
// scan walks the new commit), a refs/for push into each (a new revision of
// one patch: one amended commit, after an untimed fetch, as git review
// does), a one-commit push to a branch no patch targets (side: nothing for
// post-receive to scan), and a push into the floor.
//
// It prints medians of wall time and of CPU time (user+sys of git push
// and every process it waited for; not what serve detached), the ratio of
// each to the floor, and what the new build changes. The floor moves by
// several milliseconds between runs of bench/ssh.sh; here both builds and
// the floor share every round, so their difference is what the run
// resolves best.
//
//	make build && go run ./bench/builds -old DIR [-n 61] [-old-env K=V]…
//
// DIR is another tree (a git worktree of an older commit, say) with its
// bin/ built; the new build is this tree's bin/. -old-env sets K=V in the
// old side's serve (and the hooks it starts): with -old . it measures one
// build with a speed trick's switch off ("old") against the same build
// with it on ("new"), e.g. -old . -old-env COLLAB_NO_PREFAULT=1. The old
// side's root is made with the switches set too, so that one of the
// repository's layout (COLLAB_ODB_LINK=off) is measured the same way.
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
)

func main() {
	old := flag.String("old", "", "the other tree, with bin/ built (required)")
	n := flag.Int("n", 61, "rounds")
	var oldEnv envList
	flag.Var(&oldEnv, "old-env", "K=V for the old side's serve (repeatable)")
	flag.Parse()
	if *old == "" {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/builds -old DIR [-n 61]")
		os.Exit(2)
	}
	if err := run(*old, *n, oldEnv); err != nil {
		fmt.Fprintln(os.Stderr, "bench/builds:", err)
		os.Exit(1)
	}
}

// target is one kind of push: its clone, its transport and its ref.
type target struct {
	name, clone, transport, ref string
	amend                       bool // a new revision of one patch
	walls, cpus                 []time.Duration
}

// envList is a repeatable flag of K=V settings.
type envList []string

func (e *envList) String() string { return strings.Join(*e, " ") }

func (e *envList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" || strings.ContainsAny(v, "'\n") {
		return fmt.Errorf("want K=V without quotes or newlines, not %q", v)
	}
	*e = append(*e, v)
	return nil
}

func run(oldTree string, n int, oldEnv []string) error {
	top, err := os.Getwd()
	if err != nil {
		return err
	}
	if oldTree, err = filepath.Abs(oldTree); err != nil {
		return err
	}
	bins := map[string]string{"old": filepath.Join(oldTree, "bin"), "new": filepath.Join(top, "bin")}
	for _, b := range bins {
		for _, p := range []string{"collab-hook", "collab-hook-fast", "collab-web"} {
			if _, err := os.Stat(filepath.Join(b, p)); err != nil {
				return fmt.Errorf("%v (run make build there)", err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(top, "bench", "out"), 0o755); err != nil {
		return err
	}
	w, err := os.MkdirTemp(filepath.Join(top, "bench", "out"), "builds.")
	if err != nil {
		return err
	}
	env := append(os.Environ(), "GIT_SSH_VARIANT=ssh", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=bench@example.com", "GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	sh := func(dir, transport string, args ...string) error {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = env
		if transport != "" {
			cmd.Env = append(cmd.Env, "GIT_SSH_COMMAND="+transport)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	write := func(path, text string, mode os.FileMode) error { return os.WriteFile(path, []byte(text), mode) }

	var targets []*target
	var webs []*exec.Cmd
	stop := func() {
		for _, web := range webs {
			_ = web.Process.Kill()
			_ = web.Wait()
		}
		webs = nil
	}
	defer stop()
	// The floor: a hookless bare repository, the command run through sh.
	floor := filepath.Join(w, "floor.git")
	if err := sh(w, "", "git", "init", "-q", "--bare", floor); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(floor, "hooks")); err != nil {
		return err
	}
	plain := filepath.Join(w, "plain-transport")
	if err := write(plain, "#!/bin/sh\nfor last; do :; done\nexec sh -c \"$last\"\n", 0o755); err != nil {
		return err
	}
	// clone makes a working repository with one commit for url and, where
	// ref is given, pushes that commit there.
	clone := func(name, transport, url, ref string) (string, error) {
		d := filepath.Join(w, name)
		steps := [][]string{
			{"git", "init", "-q", "-b", "main", d},
			{"git", "-C", d, "commit", "-q", "--allow-empty", "-m", "base"},
			{"git", "-C", d, "remote", "add", "origin", url},
		}
		if ref != "" {
			steps = append(steps, []string{"git", "-C", d, "push", "-q", "origin", "HEAD:" + ref})
		}
		for _, args := range steps {
			if err := sh(w, transport, args...); err != nil {
				return "", err
			}
		}
		return d, nil
	}
	d, err := clone("c-floor", plain, "ssh://local"+floor, "main")
	if err != nil {
		return err
	}
	targets = append(targets, &target{name: "hookless push", clone: d, transport: plain, ref: "HEAD:refs/heads/main"})

	for _, b := range []string{"old", "new"} {
		hook := filepath.Join(bins[b], "collab-hook")
		root := filepath.Join(w, "root-"+b)
		for _, args := range [][]string{
			{"init", "--url", "http://bench.test"}, {"repo", "create", "demo"},
			{"user", "add", "bench"}, {"grant", "bench", "demo", "write"},
		} {
			// The old side's switches hold for making its root too: a
			// switch of the repository's layout (COLLAB_ODB_LINK) takes
			// effect there.
			cmd := append([]string{"env"}, append(map[bool][]string{true: oldEnv}[b == "old"], hook, "--root", root)...)
			if err := sh(w, "", append(cmd, args...)...); err != nil {
				return err
			}
		}
		web := exec.Command(filepath.Join(bins[b], "collab-web"), "--root", root, "--listen", "127.0.0.1:0")
		if err := web.Start(); err != nil {
			return err
		}
		webs = append(webs, web)
		transport := filepath.Join(w, "transport-"+b)
		set := ""
		if b == "old" && len(oldEnv) > 0 {
			set = "export '" + strings.Join(oldEnv, "' '") + "'\n"
		}
		if err := write(transport, fmt.Sprintf("#!/bin/sh\nfor last; do :; done\n%sSSH_ORIGINAL_COMMAND=$last exec %s --root %s serve --as bench\n", set, hook, root), 0o755); err != nil {
			return err
		}
		br, err := clone("c-"+b, transport, "ssh://local/demo.git", "main")
		if err != nil {
			return err
		}
		fr, err := clone("f-"+b, transport, "ssh://local/demo.git", "")
		if err != nil {
			return err
		}
		// The patch whose revisions the refs/for rounds push; open on main,
		// so every branch push's merge scan walks.
		for _, args := range [][]string{
			{"git", "fetch", "-q", "origin"}, {"git", "reset", "-q", "--hard", "origin/main"},
			{"git", "commit", "-q", "--allow-empty", "-m", "patch", "-m", "Patch: 00000000000000000000000000000000000000b5"},
			{"git", "push", "-q", "origin", "HEAD:refs/for/main"},
		} {
			if err := sh(fr, transport, args...); err != nil {
				return err
			}
		}
		// A branch no patch targets: nothing for post-receive to scan.
		sr, err := clone("s-"+b, transport, "ssh://local/demo.git", "side")
		if err != nil {
			return err
		}
		targets = append(targets,
			&target{name: b + " build, branch", clone: br, transport: transport, ref: "HEAD:refs/heads/main"},
			&target{name: b + " build, refs/for", clone: fr, transport: transport, ref: "HEAD:refs/for/main", amend: true},
			&target{name: b + " build, no patch", clone: sr, transport: transport, ref: "HEAD:refs/heads/side"})
	}

	for i := 0; i < n; i++ {
		for j := range targets {
			t := targets[(i+j)%len(targets)]
			if err := os.WriteFile(filepath.Join(t.clone, "f"), []byte(fmt.Sprintln(t.name, i)), 0o644); err != nil {
				return err
			}
			steps := [][]string{{"git", "add", "f"}, {"git", "commit", "-q", "-m", fmt.Sprint("round ", i)}}
			if t.amend {
				steps = [][]string{{"git", "fetch", "-q", "origin"}, {"git", "add", "f"},
					{"git", "commit", "-q", "--amend", "-m", fmt.Sprint("patch, round ", i), "-m", "Patch: 00000000000000000000000000000000000000b5"}}
			}
			for _, s := range steps {
				if err := sh(t.clone, t.transport, s...); err != nil {
					return err
				}
			}
			cmd := exec.Command("git", "push", "-q", "origin", t.ref)
			cmd.Dir = t.clone
			cmd.Env = append(env, "GIT_SSH_COMMAND="+t.transport)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			t0 := time.Now()
			err := cmd.Run()
			wall := time.Since(t0)
			if err != nil {
				return fmt.Errorf("%s: push: %v: %s", t.name, err, out.String())
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			t.walls = append(t.walls, wall)
			t.cpus = append(t.cpus, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		}
		fmt.Fprint(os.Stderr, ".")
	}
	fmt.Fprintln(os.Stderr)

	fw, fc := median(targets[0].walls), median(targets[0].cpus)
	fmt.Printf("bench/builds: %d interleaved rounds through the stand-in transport; old %s %s, new %s; medians\n", n, oldTree, strings.Join(oldEnv, " "), top)
	fmt.Printf("%-24s %8s %6s %8s %6s\n", "", "wall ms", "ratio", "cpu ms", "ratio")
	for _, t := range targets {
		tw, tc := median(t.walls), median(t.cpus)
		fmt.Printf("%-24s %8.2f %6.2f %8.2f %6.2f\n", t.name, ms(tw), float64(tw)/float64(fw), ms(tc), float64(tc)/float64(fc))
	}
	kinds := []string{"branch", "refs/for", "no patch"}
	for k, kind := range kinds {
		o, nw := targets[1+k], targets[1+len(kinds)+k]
		fmt.Printf("new - old, %-9s wall %+6.2f ms, cpu %+6.2f ms (medians of the paired rounds: %+6.2f, %+6.2f)\n", kind,
			ms(median(nw.walls)-median(o.walls)), ms(median(nw.cpus)-median(o.cpus)), ms(pairedMedian(nw.walls, o.walls)), ms(pairedMedian(nw.cpus, o.cpus)))
	}
	fmt.Printf("goals without ssh: branch <= 1.35x (old %.2f, new %.2f), refs/for <= 1.60x (old %.2f, new %.2f)\n",
		ratio(targets[1].walls, fw), ratio(targets[4].walls, fw), ratio(targets[2].walls, fw), ratio(targets[5].walls, fw))
	stop()
	return os.RemoveAll(w)
}

func median(s []time.Duration) time.Duration {
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

// pairedMedian is the median of a[i] - b[i]: the two pushes of one round.
func pairedMedian(a, b []time.Duration) time.Duration {
	d := make([]time.Duration, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return median(d)
}

func ratio(s []time.Duration, floor time.Duration) float64 {
	return float64(median(s)) / float64(floor)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
