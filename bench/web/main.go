// Command web measures collab-web on a big forge: 100,000 issues and
// 1,000,000 comments written straight into a fresh database (one public
// repository, plus a few live leases), then the real collab-web binary
// serving the issues list page and the API list endpoint.
//
// It prints, per request kind, the median and p99 latency seen by a client
// on loopback (an upper bound of the server's time), beside the floor of
// /healthz on the same server, and collab-web's resident memory (VmRSS now,
// VmHWM the peak). It also prints SQLite's query plans for the list
// queries, to show they use the issues_by_state index.
//
// With -only budget it runs the request budgets and code pages instead
// (budget.go): 20 comments of 1 MiB, a 200 × 3 MB patch and its
// interdiff under three concurrent viewers, and the blob and patch pages
// against git show / git diff.
//
//	go run ./bench/web [-only lists|budget|all] [-issues 100000] [-comments 1000000] [-n 300] [-bin collab-web]
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/store"
)

const repo = "bench.git"

func main() {
	nIssues := flag.Int("issues", 100_000, "issues to generate")
	nComments := flag.Int("comments", 1_000_000, "comments to generate")
	n := flag.Int("n", 300, "requests of each kind")
	bin := flag.String("bin", "", "collab-web binary (default: build it)")
	only := flag.String("only", "all", "lists (the big-list figures), budget (budgets and code pages) or all")
	flag.Parse()
	var err error
	if *only == "lists" || *only == "all" {
		err = run(*nIssues, *nComments, *n, *bin)
	}
	if err == nil && (*only == "budget" || *only == "all") {
		err = budgets(*bin, max(*n/15, 10))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/web:", err)
		os.Exit(1)
	}
}

// budgets builds the binaries (collab-hook for its hooks) and runs the
// budget cases in a scratch directory.
func budgets(bin string, reps int) error {
	work, err := os.MkdirTemp("", "collab-bench-budget-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	hook, err := build.Hook(work)
	if err != nil {
		return err
	}
	if bin == "" {
		if bin, err = build.Web(work); err != nil {
			return err
		}
	}
	return runBudgets(work, hook, bin, reps)
}

func run(nIssues, nComments, n int, bin string) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "collab-bench-web-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if bin == "" {
		if bin, err = build.Web(work); err != nil {
			return err
		}
	}
	root, err := forge.New(filepath.Join(work, "root"))
	if err != nil {
		return err
	}
	if err := forge.Init(ctx, root, nil); err != nil {
		return err
	}
	os.MkdirAll(filepath.Join(root.ReposDir(), repo), 0o755)
	start := time.Now()
	mid, err := generate(ctx, root, nIssues, nComments)
	if err != nil {
		return err
	}
	fmt.Printf("generated %d issues and %d comments in %s\n", nIssues, nComments, time.Since(start).Round(time.Millisecond))
	if err := plans(ctx, root); err != nil {
		return err
	}

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--root", root.Dir, "--listen", addr)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	base := "http://" + addr
	if err := waitUp(base); err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	kinds := []struct{ name, path string }{
		{"floor: GET /healthz", "/healthz"},
		{"page: issues list (open, first 50)", "/bench/-/issues"},
		{"page: issues list, deep (?after= mid-way)", "/bench/-/issues?after=" + mid},
		{"page: issues list, all states", "/bench/-/issues?state=all"},
		{"page: issue with 10 comments", "/bench/-/issues/" + mid},
		{"api: GET issues (open, 50)", "/api/v1/repos/bench/issues"},
		{"api: GET issues ?limit=200", "/api/v1/repos/bench/issues?limit=200"},
		{"api: GET issues deep ?after=", "/api/v1/repos/bench/issues?after=" + mid},
		{"search: page ?q= (trigram index)", "/bench/-/issues?q=needle"},
		{"search: api ?q= rare word", "/api/v1/repos/bench/issues?q=zzzrare"},
		{"search: api ?q= word in every issue", "/api/v1/repos/bench/issues?q=something"},
		{"search: api ?q= 2 letters (LIKE scan)", "/api/v1/repos/bench/issues?q=zq"},
	}
	fmt.Printf("\n%-44s %9s %9s %9s\n", "request", "median", "p99", "bytes")
	var floor time.Duration
	for _, k := range kinds {
		reps := n
		if strings.HasPrefix(k.name, "search") {
			reps = max(n/10, 20)
		}
		lat, size, err := measure(client, base+k.path, reps)
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		med, p99 := pct(lat, 50), pct(lat, 99)
		if floor == 0 {
			floor = med
		}
		fmt.Printf("%-44s %9s %9s %9d   (%.1fx floor)\n", k.name, ms(med), ms(p99), size, float64(med)/float64(floor))
	}
	rss, hwm := memory(cmd.Process.Pid)
	fmt.Printf("\ncollab-web memory: VmRSS %d MB, VmHWM (peak) %d MB\n", rss>>10, hwm>>10)
	fmt.Printf("goal: page median <= 10 ms, RSS <= 100 MB\n")
	return nil
}

// generate fills the database directly: issues with short bodies (every
// 1000th says "needle"), ten comments on most of them, and a live lease
// on every 100th. It returns the id of an issue half-way down.
func generate(ctx context.Context, root forge.Root, nIssues, nComments int) (string, error) {
	db, err := store.Open(ctx, root.DBPath())
	if err != nil {
		return "", err
	}
	defer db.Close()
	now := time.Now().UTC()
	var mid string
	err = db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO repos(name, public, description, created_at) VALUES (?, 1, 'benchmark', ?)", repo, store.FormatTime(now)); err != nil {
			return err
		}
		insI, err := tx.PrepareContext(ctx, `INSERT INTO issues(repo, id, title, body, state, author, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		insC, err := tx.PrepareContext(ctx, `INSERT INTO comments(repo, issue_id, id, author, body, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		insL, err := tx.PrepareContext(ctx, `INSERT INTO leases(repo, issue_id, holder, token, acquired_at, expires_at) VALUES (?, ?, 'agent', 1, ?, ?)`)
		if err != nil {
			return err
		}
		perIssue := max(nComments/max(nIssues, 1), 0)
		made := 0
		for i := 0; i < nIssues; i++ {
			id := ids.New()
			at := store.FormatTime(now.Add(time.Duration(i-nIssues) * time.Second))
			state := "open"
			if i%3 == 0 {
				state = "closed"
			}
			body := fmt.Sprintf("Issue number %d. Steps to reproduce: run the thing, watch it fail.", i)
			if i%1000 == 0 {
				body += " needle"
			}
			if i == nIssues/3 {
				body += " zzzrare"
			}
			if _, err := insI.ExecContext(ctx, repo, id, fmt.Sprintf("Issue %d: something is wrong", i), body, state, "user", at, at); err != nil {
				return err
			}
			for c := 0; c < perIssue && made < nComments; c++ {
				if _, err := insC.ExecContext(ctx, repo, id, ids.New(), "commenter", "A comment with some text in it, as people write them.", at); err != nil {
					return err
				}
				made++
			}
			if i%100 == 0 && state == "open" {
				if _, err := insL.ExecContext(ctx, repo, id, at, store.FormatTime(now.Add(time.Hour))); err != nil {
					return err
				}
			}
			if i == nIssues/2 && state == "open" || mid == "" && i > nIssues/2 && state == "open" {
				mid = id
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	// No ANALYZE: a forge never runs it, so the plans measured here are the
	// ones production gets from the schema's indexes alone.
	return mid, nil
}

func plans(ctx context.Context, root forge.Root) error {
	db, err := store.Open(ctx, root.DBPath())
	if err != nil {
		return err
	}
	defer db.Close()
	// The queries of issues.List (with its live-lease join) and of the
	// comments of one issue, as the pages and the API run them.
	const list = `SELECT i.seq, i.id, l.holder FROM issues i LEFT JOIN leases l ON l.repo = i.repo AND l.issue_id = i.id
		AND l.holder IS NOT NULL AND (l.expires_at IS NULL OR l.expires_at > '2000')`
	for _, q := range []string{
		list + " WHERE i.repo = 'bench.git' AND i.state = 'open' ORDER BY i.seq DESC LIMIT 50",
		list + " WHERE i.repo = 'bench.git' AND i.state = 'open' AND i.seq < (SELECT seq FROM issues WHERE repo = 'bench.git' AND id = 'x') ORDER BY i.seq DESC LIMIT 50",
		list + " WHERE i.repo = 'bench.git' ORDER BY i.seq DESC LIMIT 50",
		"SELECT id, author, body FROM comments WHERE repo = 'bench.git' AND issue_id = 'x' ORDER BY seq",
		`SELECT i.id FROM issues_fts f JOIN issues i ON i.seq = f.rowid WHERE issues_fts MATCH '"something"' AND i.repo = 'bench.git' AND i.state = 'open' ORDER BY f.rowid DESC LIMIT 50`,
	} {
		rows, err := db.R().QueryContext(ctx, "EXPLAIN QUERY PLAN "+q)
		if err != nil {
			return err
		}
		var steps []string
		for rows.Next() {
			var a, b, c int
			var detail string
			if err := rows.Scan(&a, &b, &c, &detail); err != nil {
				rows.Close()
				return err
			}
			steps = append(steps, detail)
		}
		rows.Close()
		fmt.Printf("plan: %s\n      -> %s\n", strings.Join(strings.Fields(q), " "), strings.Join(steps, "; "))
	}
	return nil
}

func measure(c *http.Client, url string, n int) ([]time.Duration, int, error) {
	var lat []time.Duration
	size := 0
	for i := 0; i < n+5; i++ {
		t0 := time.Now()
		res, err := c.Get(url)
		if err != nil {
			return nil, 0, err
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, 0, err
		}
		if res.StatusCode != 200 {
			return nil, 0, fmt.Errorf("status %d: %.200s", res.StatusCode, b)
		}
		if i >= 5 { // warm-up
			lat = append(lat, time.Since(t0))
		}
		size = len(b)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, size, nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

// memory reads VmRSS and VmHWM (kB) of pid.
func memory(pid int) (rss, hwm int) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		var v int
		fmt.Sscan(f[1], &v)
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func waitUp(base string) error {
	for i := 0; i < 400; i++ {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("collab-web did not start")
}
