// Command request measures what an idempotency key costs a work-queue
// claim: `lease acquire --next --request KEY` against plain `--next`, in
// process through store.DB.Write (synchronous=FULL) and the leases
// package, interleaved claim by claim on one database, each kind on its
// own queue where 64 claims stay live (a fleet of 64 agents: every pick
// walks past 64 live leases, and the oldest claim is let go, untimed).
// Every keyed claim uses a fresh key, as agents do; a retry with the key
// (a lost answer) is timed too: it is answered from a read. Goal: keyed
// median at most 1.1x plain.
//
// Then what an agent's call pays (sshd aside): `collab-hook serve`
// processes run one after another, keyed and plain interleaved, each a
// claim on its own queue as above (-procs of each; 0: in process only).
//
//	go run ./bench/request [-n 2000] [-procs 200] [-bin collab-hook] [-dir DIR]
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
)

const fleet = 64

func main() {
	n := flag.Int("n", 2000, "claims of each kind")
	procs := flag.Int("procs", 200, "serve processes of each kind (0: in process only)")
	bin := flag.String("bin", "", "collab-hook binary (default: build it)")
	dir := flag.String("dir", "", "work directory on the disk to measure (default: a temporary one)")
	flag.Parse()
	if err := run(*n, *procs, *bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "bench/request:", err)
		os.Exit(1)
	}
}

type stats []time.Duration

func (s stats) pct(p float64) time.Duration {
	c := append(stats{}, s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[int(p*float64(len(c)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond)) }

// queue is one repository's queue and the claims its agent keeps live.
type queue struct {
	repo string
	held []string
}

func run(n, procs int, bin, dir string) error {
	work, err := os.MkdirTemp(dir, "collab-bench-request-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(work, "collab.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	plain, keyed := &queue{repo: "plain.git"}, &queue{repo: "keyed.git"}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		for _, q := range []*queue{plain, keyed} {
			for i := 0; i < n; i++ {
				if _, err := tx.ExecContext(ctx, `INSERT INTO issues(repo, id, title, author, created_at, updated_at)
					VALUES (?, ?, 'bench', 'bench', 'x', 'x')`, q.repo, ids.New()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	now := time.Now()
	let := func(q *queue, id string) error {
		if q.held = append(q.held, id); len(q.held) <= fleet {
			return nil
		}
		err := db.Write(ctx, func(tx *sql.Tx) error {
			_, err := leases.Release(ctx, tx, q.repo, q.held[0], "agent", false, now)
			return err
		})
		q.held = q.held[1:]
		return err
	}
	var ps, ks, rs stats
	for i := 0; i < n; i++ {
		// Alternate which kind goes first, so neither always follows the
		// other's checkpoint or cache state.
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, withKey := range order {
			var l leases.Lease
			key := fmt.Sprintf("bench-%d-%s", i, ids.New()[:16])
			start := time.Now()
			err := db.Write(ctx, func(tx *sql.Tx) error {
				var err error
				if withKey {
					l, err = leases.AcquireNextRequest(ctx, tx, keyed.repo, "agent", key, nil, 15*time.Minute, now)
				} else {
					l, err = leases.AcquireNext(ctx, tx, plain.repo, "agent", nil, 15*time.Minute, now)
				}
				return err
			})
			d := time.Since(start)
			if err != nil {
				return fmt.Errorf("claim %d (key %v): %w", i, withKey, err)
			}
			q := plain
			if withKey {
				q, ks = keyed, append(ks, d)
				start = time.Now()
				again, ok, err := leases.Requested(ctx, db.R(), "agent", key, keyed.repo, nil, 15*time.Minute, now)
				rs = append(rs, time.Since(start))
				if err != nil || !ok || again.IssueID != l.IssueID || again.Token != l.Token {
					return fmt.Errorf("retry of claim %d: %+v %v %v, want %+v", i, again, ok, err, l)
				}
			} else {
				ps = append(ps, d)
			}
			if err := let(q, l.IssueID); err != nil {
				return err
			}
		}
	}
	fmt.Printf("work-queue claims, in process, synchronous=FULL, %d of each, interleaved, %d live claims ahead (median / p99):\n", n, fleet)
	fmt.Printf("  %-28s %s / %s\n", "acquire --next", ms(ps.pct(0.5)), ms(ps.pct(0.99)))
	fmt.Printf("  %-28s %s / %s\n", "acquire --next --request K", ms(ks.pct(0.5)), ms(ks.pct(0.99)))
	fmt.Printf("  %-28s %s / %s   (a read: no write)\n", "retry with K (lost answer)", ms(rs.pct(0.5)), ms(rs.pct(0.99)))
	r := float64(ks.pct(0.5)) / float64(ps.pct(0.5))
	fmt.Printf("  --request / plain: %.2fx (goal <= 1.1x: %v)\n", r, r <= 1.1)
	if procs == 0 {
		return nil
	}
	if bin == "" {
		if bin, err = build.Hook(work); err != nil {
			return err
		}
	}
	return serveRun(ctx, bin, filepath.Join(work, "root"), procs)
}

// serveRun times procs claims of each kind as serve processes, one after
// another, interleaved.
func serveRun(ctx context.Context, bin, root string, procs int) error {
	hook := func(args ...string) error {
		out, err := exec.Command(bin, append([]string{"--root", root}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("collab-hook %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	for _, args := range [][]string{{"init", "--url", "http://forge.test"}, {"repo", "create", "plain"}, {"repo", "create", "keyed"},
		{"user", "add", "agent"}, {"grant", "agent", "*", "write"}} {
		if err := hook(args...); err != nil {
			return err
		}
	}
	// The issues go straight into the database: filing them through serve
	// would only make the run longer.
	db, err := store.Open(ctx, layout.DB(root))
	if err != nil {
		return err
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		for _, repo := range []string{"plain.git", "keyed.git"} {
			for i := 0; i < procs; i++ {
				if _, err := tx.ExecContext(ctx, `INSERT INTO issues(repo, id, title, author, created_at, updated_at)
					VALUES (?, ?, 'bench', 'bench', 'x', 'x')`, repo, ids.New()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		return err
	}
	var ps, ks stats
	for i := 0; i < procs; i++ {
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, withKey := range order {
			line := "lease acquire plain --next --ttl 15m"
			if withKey {
				line = fmt.Sprintf("lease acquire keyed --next --ttl 15m --request bench-%d-%s", i, ids.New()[:16])
			}
			c := exec.Command(bin, "--root", root, "serve", "--as", "agent")
			c.Env = append(os.Environ(), "SSH_ORIGINAL_COMMAND="+line)
			start := time.Now()
			out, err := c.CombinedOutput()
			d := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: %v: %s", line, err, out)
			}
			if withKey {
				ks = append(ks, d)
			} else {
				ps = append(ps, d)
			}
		}
	}
	fmt.Printf("collab-hook serve processes, one after another, %d of each, interleaved (median / p99):\n", procs)
	fmt.Printf("  %-28s %s / %s\n", "acquire --next", ms(ps.pct(0.5)), ms(ps.pct(0.99)))
	fmt.Printf("  %-28s %s / %s\n", "acquire --next --request K", ms(ks.pct(0.5)), ms(ks.pct(0.99)))
	r := float64(ks.pct(0.5)) / float64(ps.pct(0.5))
	fmt.Printf("  --request / plain: %.2fx (goal <= 1.1x: %v)\n", r, r <= 1.1)
	return nil
}
