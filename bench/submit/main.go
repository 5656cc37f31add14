// Command submit measures patch submit against the stock git commands that
// make the same result in a scratch clone, interleaved in one run: a
// one-commit patch submitted into a repository of 10 000 files and 5 000
// commits, per strategy. collab's side is the submit as a verb runs it
// (submit.Gate.Submit: requirements, the build in the bare repository, the
// compare-and-swap, the merge recorded in SQLite); git's side is, in an
// up-to-date clone with a work tree (the clone and the checkout are not
// timed), `git merge --no-ff`, `git merge --ff-only`, `git rebase` plus
// a fast-forward, or `git merge --squash` plus `git commit`, then
// `git push` to a hookless bare copy. Before each non-ff round the branch
// moves by one commit, so that every merge is a real one.
//
// It prints wall-clock medians, CPU (user+sys of this process and its
// children) medians, and the ratios.
//
//	go run ./bench/submit [-files 10000] [-commits 5000] [-runs 7]
package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/submit"
)

func main() {
	files := flag.Int("files", 10000, "files in the repository")
	commits := flag.Int("commits", 5000, "commits of history")
	runs := flag.Int("runs", 7, "rounds per strategy (median printed)")
	flag.Parse()
	if err := run(*files, *commits, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/submit:", err)
		os.Exit(1)
	}
}

// sh runs git in dir (a work tree, or a bare repository with GIT_DIR).
func sh(dir string, stdin io.Reader, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=b@example.com",
		"GIT_COMMITTER_NAME=Bench", "GIT_COMMITTER_EMAIL=b@example.com", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// history writes nFiles files and nCommits commits into the bare
// repository at dir with git fast-import.
func history(dir string, nFiles, nCommits int) error {
	cmd := exec.Command("git", "--git-dir="+dir, "fast-import", "--quiet")
	pr, pw := io.Pipe()
	cmd.Stdin = pr
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(pw, 1<<20)
	name := func(i int) string { return fmt.Sprintf("src/d%02d/f%05d.txt", i%50, i) }
	for c := 1; c <= nCommits; c++ {
		msg := fmt.Sprintf("commit %d", c)
		fmt.Fprintf(w, "commit refs/heads/main\ncommitter Bench <b@example.com> %d +0000\ndata %d\n%s\n", 1700000000+c, len(msg), msg)
		if c == 1 {
			for i := 0; i < nFiles; i++ {
				body := fmt.Sprintf("file %d\nsome ordinary text\n", i)
				fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", name(i), len(body), body)
			}
			continue
		}
		for _, i := range []int{c % nFiles, (c * 7) % nFiles} {
			body := fmt.Sprintf("file %d\nchanged by commit %d\n", i, c)
			fmt.Fprintf(w, "M 100644 inline %s\ndata %d\n%s\n", name(i), len(body), body)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	pw.Close()
	return cmd.Wait()
}

type sample struct{ wall, cpu time.Duration }

func cpuNow() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func timed(fn func() error) (sample, error) {
	c0, t0 := cpuNow(), time.Now()
	err := fn()
	return sample{wall: time.Since(t0), cpu: cpuNow() - c0}, err
}

func median(ss []sample) sample {
	w := make([]time.Duration, len(ss))
	c := make([]time.Duration, len(ss))
	for i, s := range ss {
		w[i], c[i] = s.wall, s.cpu
	}
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return sample{wall: w[len(w)/2], cpu: c[len(c)/2]}
}

func run(nFiles, nCommits, runs int) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "collab-bench-submit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	root, err := forge.New(filepath.Join(work, "root"))
	if err != nil {
		return err
	}
	if err := forge.Init(ctx, root, nil); err != nil {
		return err
	}
	db, err := root.Open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	now := time.Now
	if _, err := repos.Create(ctx, root, db, "bench", false, "", "/bin/true", now()); err != nil {
		return err
	}
	forgeDir := filepath.Join(root.ReposDir(), "bench.git")
	t0 := time.Now()
	if err := history(forgeDir, nFiles, nCommits); err != nil {
		return fmt.Errorf("fast-import: %w", err)
	}
	peer := filepath.Join(work, "peer.git") // the hookless bare copy git's side pushes to
	clone := filepath.Join(work, "clone")
	if _, err := sh(work, nil, "clone", "-q", "--bare", "--no-local", forgeDir, peer); err != nil {
		return err
	}
	if _, err := sh(work, nil, "clone", "-q", peer, clone); err != nil {
		return err
	}
	fmt.Printf("repository: %d files, %d commits (made in %s)\n", nFiles, nCommits, time.Since(t0).Round(time.Millisecond))
	// A rule, so that the submit reads and decides one (no approvals).
	err = db.Write(ctx, func(tx *sql.Tx) error {
		r := branches.Default("main")
		r.Approvals = 0
		_, err := branches.Put(ctx, tx, "bench.git", r, "bench", now())
		return err
	})
	if err != nil {
		return err
	}
	gate := &submit.Gate{DB: db, Root: root,
		PatchURL: func(repo, id string) string { return "https://forge.example/bench/-/patches/" + id },
		Record:   (&ops.Service{DB: db, Root: root, Now: now}).RecordSubmitted}

	n := 0
	// commitOn makes a commit on the clone's HEAD changing one file and
	// sends it to both bare repositories under refs/bench/N.
	commitOn := func(msg string) (string, error) {
		n++
		f := filepath.Join(clone, fmt.Sprintf("bench/f%05d.txt", n))
		os.MkdirAll(filepath.Dir(f), 0o755)
		if err := os.WriteFile(f, []byte(fmt.Sprintf("round %d\n", n)), 0o644); err != nil {
			return "", err
		}
		if _, err := sh(clone, nil, "add", "-A"); err != nil {
			return "", err
		}
		if _, err := sh(clone, nil, "commit", "-q", "-m", msg); err != nil {
			return "", err
		}
		oid, err := sh(clone, nil, "rev-parse", "HEAD")
		if err != nil {
			return "", err
		}
		for _, to := range []string{forgeDir, peer} {
			if _, err := sh(clone, nil, "push", "-q", to, fmt.Sprintf("HEAD:refs/bench/%d", n)); err != nil {
				return "", err
			}
		}
		return oid, nil
	}
	// moveMain moves main in both bare repositories to oid (untimed).
	moveMain := func(oid string) error {
		for _, d := range []string{forgeDir, peer} {
			if _, err := sh(d, nil, "update-ref", "refs/heads/main", oid); err != nil {
				return err
			}
		}
		return nil
	}
	// sync makes the clone's main the bare copy's (untimed): the checkout
	// of a scratch clone is part of the clone, not of the merge.
	sync := func() error {
		if _, err := sh(clone, nil, "fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main"); err != nil {
			return err
		}
		_, err := sh(clone, nil, "checkout", "-q", "-B", "main", "origin/main")
		return err
	}

	results := map[string][3][]sample{}
	for round := 0; round < runs; round++ {
		for _, s := range branches.Strategies {
			if err := sync(); err != nil {
				return err
			}
			main, err := sh(clone, nil, "rev-parse", "HEAD")
			if err != nil {
				return err
			}
			id := fmt.Sprintf("%040x", 0xbe0000+n)
			if _, err := sh(clone, nil, "checkout", "-q", "-b", "p"+id[34:], main); err != nil {
				return err
			}
			pc, err := commitOn("patch\n\nPatch: " + id)
			if err != nil {
				return err
			}
			if _, err := sh(clone, nil, "checkout", "-q", "main"); err != nil {
				return err
			}
			if s != branches.FFOnly {
				moved, err := commitOn("main moves on")
				if err != nil {
					return err
				}
				if err := moveMain(moved); err != nil {
					return err
				}
			}
			err = db.Write(ctx, func(tx *sql.Tx) error {
				if _, err := patches.Create(ctx, tx, patches.New{Repo: "bench.git", ID: id, Title: "patch", Author: "ada", Base: "main"}, now()); err != nil {
					return err
				}
				_, _, err := patches.AddRevision(ctx, tx, "bench.git", id, pc, main, "ada", now())
				return err
			})
			if err != nil {
				return err
			}
			collab := func() error {
				_, err := gate.Submit(ctx, "bench.git", id, s, "bob")
				return err
			}
			var local sample
			gitSide := func() error {
				var steps [][]string
				switch s {
				case branches.Merge:
					steps = [][]string{{"merge", "-q", "--no-ff", "-m", "Merge patch", pc}}
				case branches.FFOnly:
					steps = [][]string{{"merge", "-q", "--ff-only", pc}}
				case branches.Rebase:
					steps = [][]string{{"checkout", "-q", "-B", "rb", pc}, {"rebase", "-q", "main"}, {"checkout", "-q", "main"}, {"merge", "-q", "--ff-only", "rb"}}
				case branches.Squash:
					steps = [][]string{{"merge", "-q", "--squash", pc}, {"commit", "-q", "-m", "patch (squashed)"}}
				}
				var err error
				local, err = timed(func() error {
					for _, st := range steps {
						if _, err := sh(clone, nil, st...); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
				_, err = sh(clone, nil, "push", "-q", "origin", "main")
				return err
			}
			// git's side works from the moved main, like the submit.
			if err := sync(); err != nil {
				return err
			}
			order := []func() error{collab, gitSide}
			if round%2 == 1 {
				order = []func() error{gitSide, collab}
			}
			var got [2]sample
			for i, fn := range order {
				smp, err := timed(fn)
				if err != nil {
					return fmt.Errorf("%s round %d: %w", s, round, err)
				}
				if round%2 == 1 {
					i = 1 - i
				}
				got[i] = smp
			}
			r := results[s]
			r[0] = append(r[0], got[0])
			r[1] = append(r[1], got[1])
			r[2] = append(r[2], local)
			results[s] = r
			// Both sides made main; the next round starts from collab's.
			if _, err := sh(peer, nil, "fetch", "-q", forgeDir, "+refs/heads/main:refs/heads/main"); err != nil {
				return err
			}
		}
	}
	fmt.Printf("%-8s %11s %11s %6s %11s %6s   %11s %11s %6s\n", "strategy", "submit", "git+push", "ratio", "git alone", "ratio", "submit CPU", "git+push", "ratio")
	r := func(a, b time.Duration) float64 { return float64(a) / float64(b) }
	for _, s := range branches.Strategies {
		c, g, l := median(results[s][0]), median(results[s][1]), median(results[s][2])
		fmt.Printf("%-8s %11s %11s %5.2fx %11s %5.2fx   %11s %11s %5.2fx\n", s,
			c.wall.Round(time.Microsecond), g.wall.Round(time.Microsecond), r(c.wall, g.wall), l.wall.Round(time.Microsecond), r(c.wall, l.wall),
			c.cpu.Round(time.Microsecond), g.cpu.Round(time.Microsecond), r(c.cpu, g.cpu))
	}
	fmt.Printf("(wall and CPU medians of %d interleaved rounds; git alone: the merge, rebase or squash in the clone without its push; goal: submit ≤ 1.5× the git commands)\n", runs)
	var open int
	db.R().QueryRowContext(ctx, "SELECT COUNT(*) FROM patches WHERE state = 'open'").Scan(&open)
	if open != 0 {
		return fmt.Errorf("%d patches were left open: a submit did not record its merge", open)
	}
	return nil
}
