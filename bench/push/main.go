// Command push measures what collab's three hooks add to a push, without
// ssh: local-path pushes (git runs receive-pack and the hooks itself),
// interleaved in one run, each round pushing one new commit into a hookless
// bare repository (the floor) and into a collab repository; first branch
// pushes to main (with an open patch on main, so the merge scan walks the
// new commit), then refs/for/main pushes (a new revision of one patch each
// round; the hookless repository just stores refs/for/main).
//
// It prints medians of wall time and of CPU time (user+sys of git push and
// every process it waited for: receive-pack, the hooks, git's helpers). CPU
// time hardly moves with the machine's load; wall time does, a lot, on a
// shared two-core machine. Goals: <= 15 ms extra for a branch push, <= 30 ms
// for a refs/for push. It also prints the peak RSS of one hook run.
//
// By default nothing else has the database open, so every hook that closes
// it is its last user and SQLite checkpoints the WAL into the database and
// deletes it on the way out. Deployed, collab-web keeps the database open
// and the hooks skip that; -deployed also runs the rounds again with one
// long-lived connection held open by the bench (as collab-web holds one)
// and prints both figures.
//
//	go run ./bench/push [-n 41] [-deployed] [-bin collab-hook]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
	"github.com/collab-forge/collab/internal/store"
)

func main() {
	var o options
	flag.IntVar(&o.n, "n", 41, "rounds per kind of push")
	flag.BoolVar(&o.deployed, "deployed", false, "also run with the database held open, as collab-web holds it")
	flag.StringVar(&o.bin, "bin", "", "collab-hook binary to measure (default: build it)")
	flag.BoolVar(&o.startup, "startup", true, "measure process start-up against an empty static Go binary")
	flag.IntVar(&o.refs, "refs", 10000, "revision refs for the loose-vs-packed connectivity check (0: skip)")
	flag.BoolVar(&o.breakdown, "breakdown", true, "print the per-process CPU of a branch and a refs/for push through serve (root, perf)")
	treeOf := flag.String("tree", "", "FILE:PID: print the CPU of the processes under PID in perf sched data FILE, and exit")
	flag.Parse()
	if *treeOf != "" {
		file, pid, _ := strings.Cut(*treeOf, ":")
		n, err := strconv.Atoi(pid)
		if err == nil {
			err = printTree(file, n)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/push:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/push:", err)
		os.Exit(1)
	}
}

type sample struct{ wall, cpu time.Duration }

type options struct {
	n                            int
	deployed, startup, breakdown bool
	bin                          string
	refs                         int
}

func run(o options) error {
	n, deployed, prebuilt := o.n, o.deployed, o.bin
	top, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(top, "bench", "out"), 0o755); err != nil {
		return err
	}
	w, err := os.MkdirTemp(filepath.Join(top, "bench", "out"), "push.")
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
	home := filepath.Join(w, "home")
	root := filepath.Join(w, "root")
	work := filepath.Join(w, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=b@e", "GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=b@e"}
	sh := func(dir string, name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	steps := [][]string{
		{bin, "--root", root, "init", "--url", "http://bench.test"},
		{bin, "--root", root, "repo", "create", "demo"},
		{"git", "init", "-q", "--bare", filepath.Join(w, "plain.git")},
		{"git", "--git-dir", filepath.Join(w, "plain.git"), "config", "receive.advertisePushOptions", "true"},
		{"git", "init", "-q", "-b", "main", work},
	}
	for _, s := range steps {
		if _, err := sh(w, s[0], s[1:]...); err != nil {
			return err
		}
	}
	collab := filepath.Join(root, "repos", "demo.git")
	plain := filepath.Join(w, "plain.git")
	const trailer = "Patch: 00000000000000000000000000000000000000aa"
	for _, s := range [][]string{
		{"commit", "-q", "--allow-empty", "-m", "init"},
		{"push", "-q", collab, "HEAD:main"},
		{"push", "-q", plain, "HEAD:main"},
		{"checkout", "-q", "-b", "review"},
		{"commit", "-q", "--allow-empty", "-m", "Open patch", "-m", trailer},
		{"push", "-q", collab, "HEAD:refs/for/main"},
		{"checkout", "-q", "main"},
	} {
		if _, err := sh(work, "git", s...); err != nil {
			return err
		}
	}
	push := func(dest, refspec string) (sample, error) {
		cmd := exec.Command("git", "push", "-q", dest, refspec)
		cmd.Dir, cmd.Env = work, env
		var errb bytes.Buffer
		cmd.Stderr = &errb
		t0 := time.Now()
		err := cmd.Run()
		wall := time.Since(t0)
		if err != nil {
			return sample{}, fmt.Errorf("push %s %s: %v: %s", dest, refspec, err, errb.String())
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		return sample{wall, cpu}, nil
	}
	type kind struct {
		name, goal    string
		prep          []string
		collab, plain string
	}
	var lines []string
	modes := []string{"alone"}
	if deployed {
		modes = append(modes, "held")
	}
	for _, mode := range modes {
		if mode == "held" {
			// What collab-web does to the file: one connection that has
			// read it and stays open for the whole run.
			db, err := store.Open(context.Background(), filepath.Join(root, "collab.db"))
			if err != nil {
				return err
			}
			var v int
			if err := db.R().QueryRow("SELECT count(*) FROM repos").Scan(&v); err != nil {
				db.Close()
				return err
			}
			defer db.Close()
			if _, err := sh(work, "git", "checkout", "-q", "main"); err != nil {
				return err
			}
		}
		lines = append(lines, fmt.Sprintf("database %s:", map[string]string{
			"alone": "opened by the hooks alone (each hook's close checkpoints the WAL)",
			"held":  "held open by a long-lived connection, as collab-web holds it (deployed)"}[mode]))
		for _, k := range []kind{
			{"branch push (main)", "15", []string{"commit", "-q", "--allow-empty", "-m", "branch"}, "HEAD:main", "HEAD:main"},
			{"refs/for/main push", "30", []string{"commit", "-q", "--amend", "--allow-empty", "-m", "Open patch, again", "-m", trailer}, "HEAD:refs/for/main", "+HEAD:refs/for/main"},
		} {
			if k.collab == "HEAD:refs/for/main" {
				if _, err := sh(work, "git", "checkout", "-q", "review"); err != nil {
					return err
				}
			}
			var c, p []sample
			for i := 0; i < n; i++ {
				args := slices.Clone(k.prep)
				args[len(args)-1] += fmt.Sprint(" ", mode, " ", i) // the last -m paragraph
				if k.collab == "HEAD:refs/for/main" {
					args = append(args[:len(args)-1], k.prep[len(k.prep)-1]) // keep the trailer paragraph last
					args[len(args)-3] += fmt.Sprint(" ", mode, " ", i)
				}
				if _, err := sh(work, "git", args...); err != nil {
					return err
				}
				order := []bool{true, false}
				if i%2 == 1 {
					order = []bool{false, true}
				}
				for _, isCollab := range order {
					dest, spec := plain, k.plain
					if isCollab {
						dest, spec = collab, k.collab
					}
					s, err := push(dest, spec)
					if err != nil {
						return err
					}
					if isCollab {
						c = append(c, s)
					} else {
						p = append(p, s)
					}
				}
			}
			pw, cw := median(p, false), median(c, false)
			pc, cc := median(p, true), median(c, true)
			lines = append(lines, fmt.Sprintf("%-19s wall: hookless %6.2f ms  collab %6.2f ms  extra %6.2f ms  ratio %.2fx | cpu: hookless %6.2f ms  collab %6.2f ms  extra %6.2f ms | goal extra <= %s ms",
				k.name, ms(pw), ms(cw), ms(cw-pw), float64(cw)/float64(pw), ms(pc), ms(cc), ms(cc-pc), k.goal))
		}
	}
	revs, _ := sh(w, "sqlite3", filepath.Join(root, "collab.db"), "SELECT count(*) FROM revisions")
	fmt.Printf("bench/push: %d interleaved rounds per kind, medians; %d CPUs; revisions recorded %s (want %d)\n", n, numCPU(), revs, n*len(modes)+1)
	for _, l := range lines {
		fmt.Println(l)
	}

	// Peak RSS of one post-receive run with the merge scan, as git runs it.
	old, _ := sh(collab, "git", "rev-parse", "main~1")
	cur, _ := sh(collab, "git", "rev-parse", "main")
	cmd := exec.Command(bin, "--root", root, "hook", "post-receive")
	cmd.Dir, cmd.Env = collab, append(env, "GIT_DIR=.")
	cmd.Stdin = strings.NewReader(old + " " + cur + " refs/heads/main\n")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("post-receive: %w", err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	fmt.Printf("collab-hook hook post-receive: peak RSS %d KiB\n", ru.Maxrss)

	var more []string
	if o.startup {
		l, err := startup(w, bin, root, collab, env, n)
		if err != nil {
			return fmt.Errorf("start-up: %w", err)
		}
		more = append(more, l...)
	}
	if o.breakdown {
		l, err := breakdown(w, work, bin, root, env,
			map[string]string{"branch": "HEAD:refs/heads/main", "refs/for": "HEAD:refs/for/main"},
			map[string][]string{"branch": {"checkout -q main"}, "refs/for": {"checkout -q review"}})
		if err != nil {
			return fmt.Errorf("breakdown: %w", err)
		}
		more = append(more, l...)
	}
	if o.refs > 0 {
		l, err := looseRefs(w, env, o.refs, min(n, 21))
		if err != nil {
			return fmt.Errorf("loose refs: %w", err)
		}
		more = append(more, l...)
	}
	for _, l := range more {
		fmt.Println(l)
	}
	return nil
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

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\nprocessor")) + 1
}
