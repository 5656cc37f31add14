// Command gerrit measures what Gerrit's client (git-review) asks the forge
// against collab's own verbs for the same data, interleaved in one run, as
// the forced command runs them (collab-hook serve --as, no sshd): `git
// review -l` (gerrit query project:P status:open) against `patch list P
// --json`, and `git review -d ID` (gerrit query --current-patch-set
// change:ID, which names no project, so every readable repository is
// searched) against `patch show P ID --json`; `whoami` is the floor (a
// process start, the principal's check, one read). The repository holds
// real commits, so that patch show's submit status runs git as it does in
// use.
//
// It prints CPU (user+sys of the serve process and the git it ran) and
// wall medians, and the ratios to the baseline verb.
//
//	go run ./bench/gerrit [-patches 200] [-repos 20] [-runs 15]
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
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
)

func main() {
	n := flag.Int("patches", 200, "open patches in the repository")
	nRepos := flag.Int("repos", 20, "other repositories the reader may read (change: searches them all)")
	runs := flag.Int("runs", 15, "rounds (median printed)")
	flag.Parse()
	if err := run(*n, *nRepos, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/gerrit:", err)
		os.Exit(1)
	}
}

type sample struct{ cpu, wall time.Duration }

func median(s []time.Duration) time.Duration {
	c := append([]time.Duration{}, s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}

func run(n, nRepos, runs int) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "collab-bench-gerrit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin, err := build.Hook(work)
	if err != nil {
		return err
	}
	root := filepath.Join(work, "root")
	hook := func(args ...string) error {
		if out, err := exec.Command(bin, append([]string{"--root", root}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("collab-hook %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	steps := [][]string{{"init", "--url", "http://forge.test"}, {"user", "add", "alice"}, {"repo", "create", "demo"}, {"grant", "alice", "demo", "read"}}
	for i := 0; i < nRepos; i++ {
		r := fmt.Sprintf("r%02d", i)
		steps = append(steps, []string{"repo", "create", r}, []string{"grant", "alice", r, "read"})
	}
	for _, s := range steps {
		if err := hook(s...); err != nil {
			return err
		}
	}
	base, tips, err := commits(filepath.Join(root, "repos", "demo.git"), n)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, filepath.Join(root, "collab.db"))
	if err != nil {
		return err
	}
	pids := make([]string, n)
	now := time.Now()
	err = db.Write(ctx, func(tx *sql.Tx) error {
		for i := range pids {
			pids[i] = ids.New()
			if _, err := patches.Create(ctx, tx, patches.New{Repo: "demo.git", ID: pids[i], Title: fmt.Sprintf("Patch %d", i),
				Topic: fmt.Sprintf("t%d", i), Author: "alice", Base: "main"}, now); err != nil {
				return err
			}
			if _, _, err := patches.AddRevision(ctx, tx, "demo.git", pids[i], tips[i], base, "alice", now); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		return err
	}
	id := pids[n/2]
	cases := []struct{ name, line, want string }{
		{"floor: whoami", "whoami --json", `"alice"`},
		{"patch list demo --limit 500 --json", "patch list demo --limit 500 --json", pids[0]},
		{"gerrit query project:demo status:open (git review -l)", "gerrit query --format=JSON project:demo status:open", fmt.Sprintf(`{"type":"stats","rowCount":%d}`, n)},
		{"patch show demo ID --json", "patch show demo " + id + " --json", `"submittable"`},
		{"gerrit query --current-patch-set change:ID (git review -d)", "gerrit query --format=JSON --current-patch-set change:" + id, `"rowCount":1}`},
	}
	got := make([][]sample, len(cases))
	for r := 0; r < runs+1; r++ {
		for i, c := range cases {
			cmd := exec.Command(bin, "--root", root, "serve", "--as", "alice")
			cmd.Env = append(os.Environ(), "SSH_ORIGINAL_COMMAND="+c.line)
			var stdout, stderr strings.Builder
			cmd.Stdout = &stdout
			cmd.Stderr = &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %v: %s", c.line, err, stderr.String())
			}
			wall := time.Since(start)
			if r == 0 {
				// The first round warms the page cache and checks the answers.
				if !strings.Contains(stdout.String(), c.want) {
					return fmt.Errorf("%s: output lacks %s:\n%.500s", c.line, c.want, stdout.String())
				}
				continue
			}
			got[i] = append(got[i], sample{cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), wall: wall})
		}
	}
	fmt.Printf("%d open patches in demo, %d more readable repositories, %d rounds interleaved (medians)\n", n, nRepos, runs)
	med := make([]sample, len(cases))
	for i := range cases {
		var cpu, wall []time.Duration
		for _, s := range got[i] {
			cpu, wall = append(cpu, s.cpu), append(wall, s.wall)
		}
		med[i] = sample{median(cpu), median(wall)}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%7.1f ms", float64(d)/float64(time.Millisecond)) }
	for i, c := range cases {
		line := fmt.Sprintf("  %-58s cpu %s  wall %s", c.name, ms(med[i].cpu), ms(med[i].wall))
		if i == 2 || i == 4 {
			line += fmt.Sprintf("   cpu %.2fx / wall %.2fx of %s", float64(med[i].cpu)/float64(med[i-1].cpu),
				float64(med[i].wall)/float64(med[i-1].wall), strings.Fields(cases[i-1].line)[1])
		}
		fmt.Println(line)
	}
	return nil
}

// commits writes a main branch of one commit and n commits on top of it
// into the bare repository at dir; it returns main's oid and theirs.
func commits(dir string, n int) (string, []string, error) {
	marksFile := filepath.Join(dir, "bench-marks")
	defer os.Remove(marksFile)
	cmd := exec.Command("git", "--git-dir="+dir, "fast-import", "--quiet", "--export-marks="+marksFile)
	pr, pw := io.Pipe()
	cmd.Stdin = pr
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	w := bufio.NewWriter(pw)
	fmt.Fprintf(w, "commit refs/heads/main\nmark :1\ncommitter Bench <b@example.com> 1700000000 +0000\ndata 4\nbase\nM 100644 inline a.txt\ndata 2\na\n\n")
	for i := 0; i < n; i++ {
		msg := fmt.Sprintf("Patch %d", i)
		fmt.Fprintf(w, "commit refs/heads/p%d\nmark :%d\ncommitter Bench <b@example.com> %d +0000\ndata %d\n%s\nfrom :1\nM 100644 inline p%d.txt\ndata 2\np\n\n",
			i, i+2, 1700000001+i, len(msg), msg, i)
	}
	if err := w.Flush(); err != nil {
		return "", nil, err
	}
	pw.Close()
	if err := cmd.Wait(); err != nil {
		return "", nil, fmt.Errorf("fast-import: %w", err)
	}
	b, err := os.ReadFile(marksFile)
	if err != nil {
		return "", nil, err
	}
	marks := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if m, oid, ok := strings.Cut(l, " "); ok {
			marks[m] = oid
		}
	}
	tips := make([]string, n)
	for i := range tips {
		tips[i] = marks[fmt.Sprintf(":%d", i+2)]
	}
	// The patches' own branches are not what a forge holds; only main is.
	if out, err := exec.Command("git", "--git-dir="+dir, "for-each-ref", "--format=delete %(refname)", "refs/heads/p*").Output(); err == nil {
		del := exec.Command("git", "--git-dir="+dir, "update-ref", "--stdin")
		del.Stdin = strings.NewReader(string(out))
		if o, err := del.CombinedOutput(); err != nil {
			return "", nil, fmt.Errorf("update-ref: %v: %s", err, o)
		}
	}
	return marks[":1"], tips, nil
}
