// Command leases measures work leases two ways.
//
// In process: the latency of acquire, renew, release (and a refused
// acquire) through store.DB.Write and the leases package, synchronous=FULL,
// median and p99, beside the floor: one bare single-statement upsert in its
// own BEGIN IMMEDIATE transaction on the same database.
//
// Across processes: 64 separate `collab-hook serve` processes (what 64 ssh
// logins run) started at once, all acquiring one issue, then 64 acquiring
// 64 different issues: the wall time from the first start to the last exit,
// the winners, the clean exit-3 losers and any SQLITE_BUSY, beside the
// floor of starting 64 `git --version` processes the same way.
//
// The work queue: 64 processes each asking `lease acquire --next` at once,
// against 64 processes each acquiring a named distinct issue at once, in
// interleaved rounds (each round on fresh repositories); goal: the queue's
// median wall time at most 1.2x the named acquires'. In process, the
// latency of leases.AcquireNext with 64 live leases ahead of the pick (a
// fleet of 64 agents), beside a named acquire.
//
//	go run ./bench/leases [-n 2000] [-procs 64] [-rounds 5] [-bin collab-hook]
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
)

const repo = "bench.git"

func main() {
	n := flag.Int("n", 2000, "in-process operations of each kind")
	procs := flag.Int("procs", 64, "racing processes (0: in-process figures only)")
	rounds := flag.Int("rounds", 5, "process races of each kind (median printed)")
	bin := flag.String("bin", "", "collab-hook binary (default: build it)")
	dir := flag.String("dir", "", "work directory on the disk to measure (default: a temporary one)")
	flag.Parse()
	if *procs == 0 {
		*rounds = 0
	}
	if err := run(*n, *procs, *rounds, *bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench/leases:", err)
		os.Exit(1)
	}
}

func run(n, procs, rounds int, bin, dir string) error {
	work, err := os.MkdirTemp(dir, "collab-bench-leases-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := inProcess(filepath.Join(work, "inproc.db"), n); err != nil {
		return err
	}
	if rounds == 0 {
		return nil
	}
	if bin == "" {
		var err error
		if bin, err = build.Hook(work); err != nil {
			return err
		}
	}
	return race(bin, filepath.Join(work, "root"), procs, rounds)
}

// stats is a set of latencies.
type stats []time.Duration

func (s stats) pct(p float64) time.Duration {
	c := append(stats{}, s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[int(p*float64(len(c)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

func inProcess(path string, n int) error {
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	issueIDs := make([]string, n)
	err = db.Write(ctx, func(tx *sql.Tx) error {
		for i := range issueIDs {
			issueIDs[i] = ids.New()
			if _, err := tx.ExecContext(ctx, `INSERT INTO issues(repo, id, title, author, created_at, updated_at)
				VALUES (?, ?, 'bench', 'bench', 'x', 'x')`, repo, issueIDs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var acq, ren, rel, refused, floor stats
	timed := func(s *stats, fn func(tx *sql.Tx) error) error {
		start := time.Now()
		err := db.Write(ctx, fn)
		*s = append(*s, time.Since(start))
		return err
	}
	now := time.Now()
	for _, id := range issueIDs {
		if err := timed(&acq, func(tx *sql.Tx) error {
			_, err := leases.Acquire(ctx, tx, repo, id, "alice", 15*time.Minute, false, now)
			return err
		}); err != nil {
			return err
		}
		if err := timed(&refused, func(tx *sql.Tx) error {
			_, err := leases.Acquire(ctx, tx, repo, id, "bob", 15*time.Minute, false, now)
			if err == nil {
				return errors.New("bob acquired alice's lease")
			}
			return nil
		}); err != nil {
			return err
		}
		if err := timed(&ren, func(tx *sql.Tx) error {
			_, err := leases.Renew(ctx, tx, repo, id, "alice", 15*time.Minute, now)
			return err
		}); err != nil {
			return err
		}
		if err := timed(&rel, func(tx *sql.Tx) error {
			_, err := leases.Release(ctx, tx, repo, id, "alice", false, now)
			return err
		}); err != nil {
			return err
		}
	}
	// The queue as a fleet of 64 agents keeps it: each pick walks past the
	// 64 live leases of the others, and the oldest claim is let go.
	next, err := queueInProcess(ctx, db, n, now)
	if err != nil {
		return err
	}
	if _, err := db.R().ExecContext(ctx, "CREATE TABLE floor(k TEXT PRIMARY KEY, holder TEXT, token INTEGER) STRICT"); err != nil {
		return err
	}
	for _, id := range issueIDs {
		if err := timed(&floor, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, `INSERT INTO floor(k, holder, token) VALUES (?, 'alice', 1)
				ON CONFLICT(k) DO UPDATE SET token = token + 1 RETURNING token`, id)
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			return errors.Join(rows.Err(), rows.Close())
		}); err != nil {
			return err
		}
	}
	fmt.Printf("in-process, synchronous=FULL, %d operations each (median / p99):\n", n)
	base := floor.pct(0.5)
	for _, r := range []struct {
		name string
		s    stats
	}{{"acquire", acq}, {"acquire --next", next}, {"acquire refused", refused}, {"renew", ren}, {"release", rel}, {"floor: bare upsert", floor}} {
		fmt.Printf("  %-20s %s / %s   (%.2fx floor)\n", r.name, ms(r.s.pct(0.5)), ms(r.s.pct(0.99)), float64(r.s.pct(0.5))/float64(base))
	}
	fmt.Printf("  goal: acquire median <= 0.300 ms: %v\n", acq.pct(0.5) <= 300*time.Microsecond)
	fmt.Printf("  acquire --next (64 live leases ahead) / acquire: %.2fx\n", float64(next.pct(0.5))/float64(acq.pct(0.5)))
	return nil
}

// queueInProcess times n picks of leases.AcquireNext on a queue of its own
// repository where 64 claims stay live: after each pick the oldest claim
// beyond 64 is released (untimed), so every pick passes 64 live leases.
func queueInProcess(ctx context.Context, db *store.DB, n int, now time.Time) (stats, error) {
	const queue, fleet = "queue.git", 64
	err := db.Write(ctx, func(tx *sql.Tx) error {
		for i := 0; i < n; i++ {
			if _, err := tx.ExecContext(ctx, `INSERT INTO issues(repo, id, title, author, created_at, updated_at)
				VALUES (?, ?, 'bench', 'bench', 'x', 'x')`, queue, ids.New()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var s stats
	var held []string
	for i := 0; i < n; i++ {
		var l leases.Lease
		start := time.Now()
		err := db.Write(ctx, func(tx *sql.Tx) error {
			var err error
			l, err = leases.AcquireNext(ctx, tx, queue, "agent", nil, 15*time.Minute, now)
			return err
		})
		s = append(s, time.Since(start))
		if err != nil {
			return nil, fmt.Errorf("acquire --next %d: %w", i, err)
		}
		if held = append(held, l.IssueID); len(held) > fleet {
			err := db.Write(ctx, func(tx *sql.Tx) error {
				_, err := leases.Release(ctx, tx, queue, held[0], "agent", false, now)
				return err
			})
			if err != nil {
				return nil, err
			}
			held = held[1:]
		}
	}
	return s, nil
}

func race(bin, root string, procs, rounds int) error {
	hook := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"--root", root}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("collab-hook %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	serve := func(who, line string) *exec.Cmd {
		c := exec.Command(bin, "--root", root, "serve", "--as", who)
		c.Env = append(os.Environ(), "SSH_ORIGINAL_COMMAND="+line)
		return c
	}
	if _, err := hook("init", "--url", "http://forge.test"); err != nil {
		return err
	}
	if _, err := hook("repo", "create", "bench"); err != nil {
		return err
	}
	for i := 0; i < procs; i++ {
		if _, err := hook("user", "add", fmt.Sprintf("w%d", i)); err != nil {
			return err
		}
		if _, err := hook("grant", fmt.Sprintf("w%d", i), "*", "write"); err != nil {
			return err
		}
	}
	newIssue := func(repo string) (string, error) {
		out, err := serve("w0", "issue new "+repo+" --title race").Output()
		if err != nil {
			return "", fmt.Errorf("issue new: %w", err)
		}
		f := strings.Fields(string(out))
		if len(f) < 2 || !ids.Valid(f[1]) {
			return "", fmt.Errorf("issue new printed %q", out)
		}
		return f[1], nil
	}
	var one, many, floor, oneCPU, manyCPU, floorCPU stats
	for r := 0; r < rounds; r++ {
		id, err := newIssue("bench")
		if err != nil {
			return err
		}
		cmds := make([]*exec.Cmd, procs)
		for i := range cmds {
			cmds[i] = serve(fmt.Sprintf("w%d", i), "lease acquire bench "+id+" --ttl 10m")
		}
		wall, codes, busy, err := startAll(cmds, &oneCPU)
		if err != nil {
			return err
		}
		if codes[0] != 1 || codes[3] != procs-1 || busy != 0 {
			return fmt.Errorf("one-issue race round %d: exit codes %v, %d busy", r, codes, busy)
		}
		one = append(one, wall)

		for i := range cmds {
			id, err := newIssue("bench")
			if err != nil {
				return err
			}
			cmds[i] = serve(fmt.Sprintf("w%d", i), "lease acquire bench "+id+" --ttl 10m")
		}
		wall, codes, busy, err = startAll(cmds, &manyCPU)
		if err != nil {
			return err
		}
		if codes[0] != procs || busy != 0 {
			return fmt.Errorf("many-issue race round %d: exit codes %v, %d busy", r, codes, busy)
		}
		many = append(many, wall)

		for i := range cmds {
			cmds[i] = exec.Command("git", "--version")
		}
		if wall, _, _, err = startAll(cmds, &floorCPU); err != nil {
			return err
		}
		floor = append(floor, wall)
	}
	fmt.Printf("%d collab-hook serve processes started at once, %d rounds (median wall, first start to last exit):\n", procs, rounds)
	fmt.Printf("  %-34s %s   CPU per process %s   (1 winner, %d exit 3, 0 SQLITE_BUSY every round)\n", "one issue", ms(one.pct(0.5)), ms(oneCPU.pct(0.5)), procs-1)
	fmt.Printf("  %-34s %s   CPU per process %s   (all %d won, 0 SQLITE_BUSY)\n", fmt.Sprintf("%d issues", procs), ms(many.pct(0.5)), ms(manyCPU.pct(0.5)), procs)
	fmt.Printf("  %-34s %s   CPU per process %s\n", fmt.Sprintf("floor: %d x git --version", procs), ms(floor.pct(0.5)), ms(floorCPU.pct(0.5)))
	fmt.Printf("  %d cores: CPU-bound lower bound of the one-issue race %s\n", runtime.NumCPU(),
		ms(oneCPU.pct(0.5)*time.Duration(procs)/time.Duration(runtime.NumCPU())))
	fmt.Printf("  one issue / floor: %.2fx; goal <= 150 ms: %v\n", float64(one.pct(0.5))/float64(floor.pct(0.5)), one.pct(0.5) <= 150*time.Millisecond)
	return queueRace(procs, rounds, hook, serve, newIssue)
}

// queueRace compares the work queue with named acquires: per round, on
// fresh repositories of procs open issues each, procs processes each
// acquiring a named distinct issue, and procs processes each asking for
// the next one, in turn, the order alternating between rounds.
func queueRace(procs, rounds int, hook func(args ...string) (string, error), serve func(who, line string) *exec.Cmd,
	newIssue func(repo string) (string, error)) error {
	var named, next, namedCPU, nextCPU stats
	for r := 0; r < rounds; r++ {
		namedRepo, queueRepo := fmt.Sprintf("named%d", r), fmt.Sprintf("queue%d", r)
		ids := make([]string, procs)
		for _, repo := range []string{namedRepo, queueRepo} {
			if _, err := hook("repo", "create", repo); err != nil {
				return err
			}
			for i := range ids {
				id, err := newIssue(repo)
				if err != nil {
					return err
				}
				if repo == namedRepo {
					ids[i] = id
				}
			}
		}
		runNamed := func() error {
			cmds := make([]*exec.Cmd, procs)
			for i := range cmds {
				cmds[i] = serve(fmt.Sprintf("w%d", i), "lease acquire "+namedRepo+" "+ids[i]+" --ttl 10m")
			}
			wall, codes, busy, err := startAll(cmds, &namedCPU)
			if err == nil && (codes[0] != procs || busy != 0) {
				err = fmt.Errorf("named round %d: exit codes %v, %d busy", r, codes, busy)
			}
			named = append(named, wall)
			return err
		}
		runNext := func() error {
			cmds := make([]*exec.Cmd, procs)
			for i := range cmds {
				cmds[i] = serve(fmt.Sprintf("w%d", i), "lease acquire "+queueRepo+" --next --ttl 10m --json")
			}
			outs := make([]bytes.Buffer, procs)
			for i := range cmds {
				cmds[i].Stdout = &outs[i]
			}
			wall, codes, busy, err := startAll(cmds, &nextCPU)
			if err == nil && (codes[0] != procs || busy != 0) {
				err = fmt.Errorf("queue round %d: exit codes %v, %d busy", r, codes, busy)
			}
			got := map[string]bool{}
			for i := range outs {
				var l struct {
					IssueID string `json:"issue_id"`
					Token   int64  `json:"token"`
				}
				if json.Unmarshal(outs[i].Bytes(), &l) == nil && l.Token == 1 {
					got[l.IssueID] = true
				}
			}
			if err == nil && len(got) != procs {
				err = fmt.Errorf("queue round %d: %d distinct issues with token 1 for %d processes", r, len(got), procs)
			}
			next = append(next, wall)
			return err
		}
		order := []func() error{runNamed, runNext}
		if r%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, run := range order {
			if err := run(); err != nil {
				return err
			}
		}
	}
	ratio := float64(next.pct(0.5)) / float64(named.pct(0.5))
	fmt.Printf("the work queue: %d processes at once on %d open issues, %d interleaved rounds (median wall; CPU per process):\n", procs, procs, rounds)
	fmt.Printf("  %-34s %s   CPU %s   (all %d won, token 1, 0 SQLITE_BUSY)\n", "named: lease acquire REPO ID", ms(named.pct(0.5)), ms(namedCPU.pct(0.5)), procs)
	fmt.Printf("  %-34s %s   CPU %s   (%d distinct issues, token 1, 0 SQLITE_BUSY)\n", "queue: lease acquire REPO --next", ms(next.pct(0.5)), ms(nextCPU.pct(0.5)), procs)
	fmt.Printf("  per round (named / queue):")
	for i := range named {
		fmt.Printf(" %s/%s", ms(named[i]), ms(next[i]))
	}
	fmt.Printf("\n  queue / named: %.2fx wall, %.2fx CPU; goal <= 1.2x: %v\n", ratio,
		float64(nextCPU.pct(0.5))/float64(namedCPU.pct(0.5)), ratio <= 1.2)
	return nil
}

// startAll starts every command, waits for all, and returns the wall time,
// a count of exit codes and how many printed SQLITE_BUSY or "locked"; it
// adds the CPU time the processes used to *cpu.
func startAll(cmds []*exec.Cmd, cpu *stats) (time.Duration, map[int]int, int, error) {
	errs := make([]bytes.Buffer, len(cmds))
	for i, c := range cmds {
		c.Stderr = &errs[i]
	}
	start := time.Now()
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			return 0, nil, 0, err
		}
	}
	var wg sync.WaitGroup
	for _, c := range cmds {
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Wait() }()
	}
	wg.Wait()
	wall := time.Since(start)
	codes := map[int]int{}
	busy := 0
	for i, c := range cmds {
		codes[c.ProcessState.ExitCode()]++
		*cpu = append(*cpu, c.ProcessState.UserTime()+c.ProcessState.SystemTime())
		s := strings.ToLower(errs[i].String())
		if strings.Contains(s, "busy") || strings.Contains(s, "locked") {
			busy++
		}
	}
	return wall, codes, busy, nil
}
