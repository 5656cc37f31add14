// Command export measures collab-hook export on a large forge: 10 000
// issues with 100 000 comments (plus lease tenures and patches with
// revisions and reviews), generated straight into the database. It prints
// the time of a full export, of an import of it into a fresh forge
// (collab-hook import), of a no-op re-export and of incremental
// exports, the repository's size, and compares the full export with stock
// git writing the same objects and refs (git fast-import of the export's
// own fast-export stream, unsigned).
//
//	go run ./bench/export [-issues 10000] [-comments 100000] [-runs 3]
package main

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/export"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/store"
)

const repo = "bench.git"

func main() {
	nIssues := flag.Int("issues", 10000, "issues to generate")
	nComments := flag.Int("comments", 100000, "comments to generate, spread over the issues")
	nPatches := flag.Int("patches", 1000, "patches to generate (2 revisions, 2 reviews each)")
	runs := flag.Int("runs", 3, "runs per measurement (median printed)")
	keep := flag.Bool("keep", false, "keep the work directory")
	flag.Parse()
	if err := run(*nIssues, *nComments, *nPatches, *runs, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench/export:", err)
		os.Exit(1)
	}
}

func run(nIssues, nComments, nPatches, runs int, keep bool) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "collab-bench-export-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}
	db, err := store.Open(ctx, filepath.Join(work, "collab.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	t := time.Now()
	if err := generate(ctx, db, nIssues, nComments, nPatches); err != nil {
		return err
	}
	fmt.Printf("generated %d issues, %d comments, %d patches in %s\n", nIssues, nComments, nPatches, since(t))
	key := ed25519.NewKeyFromSeed([]byte("collab bench export key 32 bytes"))
	x := &export.Exporter{DB: db, Key: key}
	if os.Getenv("BENCH_LOG") != "" {
		x.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)

	// Full export, each run into a fresh repository.
	var full []time.Duration
	var dir string
	var res export.Result
	for i := 0; i < runs; i++ {
		dir = filepath.Join(work, fmt.Sprintf("full%d.git", i))
		if err := git("", "init", "-q", "--bare", dir); err != nil {
			return err
		}
		t := time.Now()
		res, err = x.Export(ctx, repo, dir, now)
		if err != nil {
			return err
		}
		full = append(full, time.Since(t))
	}
	fmt.Printf("full export: median %s over %d runs (%d records, %d refs, %d objects)\n",
		median(full), runs, res.Records, len(res.Updated), res.Objects)
	size, err := du(dir)
	if err != nil {
		return err
	}
	fmt.Printf("repository size after export: %s (one undeltified pack, packed refs)\n", mb(size))

	// Import of that export into a fresh forge, each run (collab-hook
	// import --from PATH, the signatures checked against the key).
	var imp []time.Duration
	var ires export.Imported
	for i := 0; i < runs; i++ {
		root := forge.Root{Dir: filepath.Join(work, fmt.Sprintf("forge%d", i))}
		if err := forge.Init(ctx, root, nil); err != nil {
			return err
		}
		rdb, err := root.Open(ctx)
		if err != nil {
			return err
		}
		im := &export.Importer{Root: root, DB: rdb}
		t := time.Now()
		ires, err = im.Import(ctx, export.Import{Repo: repo, From: dir, Keys: []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}, Binary: "/bin/true"})
		imp = append(imp, time.Since(t))
		rdb.Close()
		if err != nil {
			return err
		}
	}
	fmt.Printf("import of that export into a fresh forge: median %s over %d runs (%d issues, %d patches, %d commits checked); import/export = %.2f\n",
		median(imp), runs, ires.Issues, ires.Patches, ires.Checked, ratio(median(imp), median(full)))
	if err := reimport(ctx, filepath.Join(work, "forge0"), dir, key); err != nil {
		return err
	}
	// The same from a URL (file://): fetched into a scratch repository
	// first, as from another forge.
	{
		root := forge.Root{Dir: filepath.Join(work, "forge-url")}
		if err := forge.Init(ctx, root, nil); err != nil {
			return err
		}
		rdb, err := root.Open(ctx)
		if err != nil {
			return err
		}
		im := &export.Importer{Root: root, DB: rdb}
		t := time.Now()
		_, err = im.Import(ctx, export.Import{Repo: repo, From: "file://" + dir, Keys: []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}, Binary: "/bin/true"})
		d := time.Since(t)
		rdb.Close()
		if err != nil {
			return err
		}
		fmt.Printf("import from file:// (fetched first): %s; import/export = %.2f\n", d.Round(time.Millisecond), ratio(d, median(full)))
	}

	// Stock git writing the same objects and refs, unsigned.
	stream := filepath.Join(work, "stream.fi")
	if err := gitTo(dir, stream, "fast-export", "--all"); err != nil {
		return err
	}
	var fi []time.Duration
	for i := 0; i < runs; i++ {
		d := filepath.Join(work, fmt.Sprintf("fi%d.git", i))
		if err := git("", "init", "-q", "--bare", d); err != nil {
			return err
		}
		t := time.Now()
		if err := gitFrom(d, stream, "fast-import", "--quiet"); err != nil {
			return err
		}
		fi = append(fi, time.Since(t))
	}
	fmt.Printf("git fast-import of the same records (unsigned): median %s; export/fast-import = %.2f\n",
		median(fi), ratio(median(full), median(fi)))

	// No-op re-export.
	var noop []time.Duration
	for i := 0; i < runs; i++ {
		t := time.Now()
		r, err := x.Export(ctx, repo, dir, now)
		if err != nil {
			return err
		}
		if len(r.Updated) != 0 {
			return fmt.Errorf("no-op export moved %d refs", len(r.Updated))
		}
		noop = append(noop, time.Since(t))
	}
	fmt.Printf("no-op re-export: median %s (nothing written)\n", median(noop))

	// Incremental exports after new comments.
	for _, n := range []int{1, 100} {
		var inc []time.Duration
		for i := 0; i < runs; i++ {
			if err := addComments(ctx, db, n, nIssues, i); err != nil {
				return err
			}
			t := time.Now()
			r, err := x.Export(ctx, repo, dir, now)
			if err != nil {
				return err
			}
			inc = append(inc, time.Since(t))
			if len(r.Updated) != n {
				return fmt.Errorf("after %d new comments on %d issues, %d refs moved", n, n, len(r.Updated))
			}
		}
		fmt.Printf("incremental export after %d new comment(s) on %d issue(s): median %s (%d commit(s))\n", n, n, median(inc), n)
	}

	// Verification of every signature in the history.
	t = time.Now()
	rep, err := export.Verify(ctx, dir, key.Public().(ed25519.PublicKey))
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("verify: %v", rep.Problems[:1])
	}
	fmt.Printf("export verify: %s for %d refs, %d commits\n", since(t), rep.Refs, rep.Commits)

	size, err = du(dir)
	if err != nil {
		return err
	}
	t = time.Now()
	if err := git(dir, "gc", "-q"); err != nil {
		return err
	}
	gcTime := since(t)
	after, err := du(dir)
	if err != nil {
		return err
	}
	fmt.Printf("repository size: %s before git gc, %s after (gc took %s)\n", mb(size), mb(after), gcTime)
	return nil
}

// reimport imports the export again into the forge at root, which has it
// all already: it must write nothing.
func reimport(ctx context.Context, root, dir string, key ed25519.PrivateKey) error {
	r := forge.Root{Dir: root}
	db, err := r.Open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	im := &export.Importer{Root: r, DB: db}
	t := time.Now()
	res, err := im.Import(ctx, export.Import{Repo: repo, From: dir, Keys: []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}, Binary: "/bin/true"})
	if err != nil {
		return err
	}
	if res.Issues+res.Patches != 0 {
		return fmt.Errorf("a second import wrote %d records", res.Issues+res.Patches)
	}
	fmt.Printf("import again (nothing written, %d records compared): %s\n", res.Unchanged, since(t))
	return nil
}

// generate writes the rows in one transaction, as a busy forge's history.
func generate(ctx context.Context, db *store.DB, nIssues, nComments, nPatches int) error {
	rnd := rand.New(rand.NewSource(1))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts := func(sec int) string { return store.FormatTime(t0.Add(time.Duration(sec) * time.Second)) }
	id := func(kind, n int) string { return fmt.Sprintf("%02x%038x", kind, n+1) }
	words := strings.Fields("the build fails when the cache is cold and the lease expires before the worker pushes its patch so we retry")
	text := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[rnd.Intn(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	return db.Write(ctx, func(tx *sql.Tx) error {
		stmt := func(q string) (*sql.Stmt, error) { return tx.PrepareContext(ctx, q) }
		issue, err := stmt(`INSERT INTO issues(repo, id, title, body, state, author, created_at, updated_at, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		comment, err := stmt(`INSERT INTO comments(repo, issue_id, id, author, body, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		tenure, err := stmt(`INSERT INTO tenures(repo, issue_id, token, holder, acquired_at, expires_at, ended_at, end_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		for i := 0; i < nIssues; i++ {
			state, closed := "open", any(nil)
			if i%3 == 0 {
				state, closed = "closed", ts(i*100+90)
			}
			if _, err := issue.ExecContext(ctx, repo, id(1, i), "Issue "+text(6), text(40), state,
				fmt.Sprintf("user%d", i%50), ts(i*100), ts(i*100+1), closed); err != nil {
				return err
			}
			if i%5 == 0 {
				if _, err := tenure.ExecContext(ctx, repo, id(1, i), 1, fmt.Sprintf("agent-%d", i%7), ts(i*100+2),
					ts(i*100+902), ts(i*100+50), "released"); err != nil {
					return err
				}
			}
		}
		for c := 0; c < nComments; c++ {
			i := c % nIssues
			if _, err := comment.ExecContext(ctx, repo, id(1, i), id(2, c), fmt.Sprintf("user%d", c%50),
				text(30), ts(i*100+3+c/nIssues)); err != nil {
				return err
			}
		}
		for p := 0; p < nPatches; p++ {
			pid := id(3, p)
			if _, err := tx.ExecContext(ctx, `INSERT INTO patches(repo, id, title, description, state, author, base, created_at, updated_at)
				VALUES (?, ?, ?, ?, 'open', ?, 'main', ?, ?)`, repo, pid, "Patch "+text(5), text(20), "ada", ts(p*50), ts(p*50+9)); err != nil {
				return err
			}
			for r := 1; r <= 2; r++ {
				if _, err := tx.ExecContext(ctx, `INSERT INTO revisions(repo, patch_id, number, commit_oid, base_commit, pusher, created_at)
					VALUES (?, ?, ?, ?, ?, 'ada', ?)`, repo, pid, r, id(4, p*2+r), id(5, p), ts(p*50+r)); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, created_at)
					VALUES (?, ?, ?, ?, 'bob', 'comment', ?, ?)`, repo, pid, id(6, p*2+r), r, text(15), ts(p*50+r+3)); err != nil {
					return err
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO patch_issues(repo, patch_id, issue_id) VALUES (?, ?, ?)`, repo, pid, id(1, p%nIssues)); err != nil {
				return err
			}
		}
		return nil
	})
}

// addComments adds one comment to each of n issues (round i picks others).
func addComments(ctx context.Context, db *store.DB, n, nIssues, round int) error {
	return db.Write(ctx, func(tx *sql.Tx) error {
		for k := 0; k < n; k++ {
			i := (round*7919 + k*37) % nIssues
			cid := fmt.Sprintf("%02x%038x", 7, n*1000000+round*100000+k+1)
			if _, err := tx.ExecContext(ctx, `INSERT INTO comments(repo, issue_id, id, author, body, created_at) VALUES (?, ?, ?, 'late', 'one more', ?)`,
				repo, fmt.Sprintf("%02x%038x", 1, i+1), cid, store.FormatTime(time.Date(2026, 12, 1, 0, 0, round, 0, time.UTC))); err != nil {
				return err
			}
		}
		return nil
	})
}

func git(dir string, args ...string) error {
	if dir != "" {
		args = append([]string{"--git-dir", dir}, args...)
	}
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, out)
	}
	return nil
}

func gitTo(dir, path string, args ...string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c := exec.Command("git", append([]string{"--git-dir", dir}, args...)...)
	c.Stdout = f
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, errb.String())
	}
	return nil
}

func gitFrom(dir, path string, args ...string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c := exec.Command("git", append([]string{"--git-dir", dir}, args...)...)
	c.Stdin = f
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, out)
	}
	return nil
}

// du is the disk space of dir's files, in whole blocks as du(1) counts it
// (a loose ref costs a 4 KB block, not its 41 bytes).
func du(dir string) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration{}, ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(time.Millisecond)
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
