// Command review measures the diffs of code review against stock git in
// the same run: a revision's diff (collab's diff.Revision against a bare
// git diff of the same range), the interdiff of a rebased revision
// (diff.Interdiff against git range-diff, the pusher's hint, and against
// the plain diff of the two trees), a revision adding 5 000 files and one
// adding a 50 MB blob. It prints medians and ratios.
//
//	go run ./bench/review [-files 2000] [-runs 5]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/diff"
)

func main() {
	files := flag.Int("files", 2000, "files in the base tree (a revision changes a tenth of them)")
	runs := flag.Int("runs", 5, "runs per measurement (median printed)")
	flag.Parse()
	if err := run(*files, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/review:", err)
		os.Exit(1)
	}
}

// content is a 100-line file whose lines in change are replaced.
func content(file int, change map[int]string) string {
	var b strings.Builder
	for l := 1; l <= 100; l++ {
		if s, ok := change[l]; ok {
			b.WriteString(s + "\n")
		} else {
			fmt.Fprintf(&b, "file %d line %d: some ordinary source text\n", file, l)
		}
	}
	return b.String()
}

type importer struct {
	w   *bufio.Writer
	n   int
	ref string
}

func (im *importer) commit(msg, from string, files map[string]string) string {
	im.n++
	mark := fmt.Sprintf(":%d", im.n)
	fmt.Fprintf(im.w, "commit %s\nmark %s\ncommitter Bench <b@example.com> %d +0000\ndata %d\n%s\n", im.ref, mark, 1700000000+im.n, len(msg), msg)
	if from != "" {
		fmt.Fprintf(im.w, "from %s\n", from)
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, p := range names {
		fmt.Fprintf(im.w, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
	}
	return mark
}

func run(nFiles, runs int) error {
	ctx := context.Background()
	work, err := os.MkdirTemp("", "collab-bench-review-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "bench.git")
	if err := git(repo, nil, "init", "-q", "--bare", repo); err != nil {
		return err
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- git(repo, pr, "fast-import", "--quiet", "--export-marks="+filepath.Join(work, "marks"))
	}()
	im := &importer{w: bufio.NewWriterSize(pw, 1<<20), ref: "refs/heads/main"}
	name := func(i int) string { return fmt.Sprintf("src/d%02d/f%05d.txt", i%40, i) }

	all := map[string]string{}
	for i := 0; i < nFiles; i++ {
		all[name(i)] = content(i, nil)
	}
	base1 := im.commit("base", "", all)
	// Revision 1 changes a tenth of the files.
	touched := nFiles / 10
	rev1Files := map[string]string{}
	for i := 0; i < touched; i++ {
		rev1Files[name(i)] = content(i, map[int]string{10: "author"})
	}
	im.ref = "refs/heads/rev1"
	rev1 := im.commit("revision 1", base1, rev1Files)
	// The base moves: other files, and some of the author's, elsewhere.
	im.ref = "refs/heads/main"
	base2Files := map[string]string{}
	for i := nFiles / 2; i < nFiles/2+touched; i++ {
		base2Files[name(i)] = content(i, map[int]string{50: "base"})
	}
	for i := 0; i < touched/10; i++ {
		base2Files[name(i)] = content(i, map[int]string{90: "base"})
	}
	base2 := im.commit("base moves", base1, base2Files)
	// Revision 2: revision 1 rebased, plus a few more changes.
	rev2Files := map[string]string{}
	for i := 0; i < touched; i++ {
		ch := map[int]string{10: "author"}
		if i < touched/10 {
			ch[90] = "base"
		}
		if i%20 == 0 {
			ch[20] = "author again"
		}
		rev2Files[name(i)] = content(i, ch)
	}
	im.ref = "refs/heads/rev2"
	rev2 := im.commit("revision 2", base2, rev2Files)
	// 5 000 new files.
	many := map[string]string{}
	for i := 0; i < 5000; i++ {
		many[fmt.Sprintf("many/f%05d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	im.ref = "refs/heads/many"
	manyMark := im.commit("5000 files", base2, many)
	_ = manyMark
	if err := im.w.Flush(); err != nil {
		return err
	}
	pw.Close()
	if err := <-done; err != nil {
		return err
	}
	// A 50 MB text blob, streamed in with hash-object.
	bigBlob, err := bigBlob(repo)
	if err != nil {
		return err
	}
	oid := func(rev string) string {
		out, _ := exec.Command("git", "--git-dir", repo, "rev-parse", rev).Output()
		return strings.TrimSpace(string(out))
	}
	b1, r1, b2, r2 := oid("main~1"), oid("rev1"), oid("main"), oid("rev2")
	_, _, _, _ = base1, rev1, base2, rev2
	manyC := oid("many")
	bigC, err := commitWithBlob(repo, b2, bigBlob)
	if err != nil {
		return err
	}

	fmt.Printf("repository: %d files of 100 lines; revisions change %d; the base moved by %d files (%d of them the author's)\n",
		nFiles, touched, touched+touched/10, touched/10)
	lim := diff.DefaultLimits()
	cases := []struct {
		name   string
		collab func() error
		peers  map[string][]string
	}{
		{fmt.Sprintf("revision diff (%d files)", touched),
			func() error { _, err := diff.Revision(ctx, repo, diff.Range{Base: b1, Commit: r1}, lim); return err },
			map[string][]string{"git diff": {"diff", b1, r1}}},
		{"interdiff 1→2 (rebased)",
			func() error {
				_, err := diff.Interdiff(ctx, repo, diff.Range{Base: b1, Commit: r1}, diff.Range{Base: b2, Commit: r2}, lim)
				return err
			},
			map[string][]string{
				"git range-diff":        {"range-diff", b1 + ".." + r1, b2 + ".." + r2},
				"git diff of the trees": {"diff", r1, r2},
			}},
		{"revision diff (5000 new files, cut at 1000)",
			func() error { _, err := diff.Revision(ctx, repo, diff.Range{Base: b2, Commit: manyC}, lim); return err },
			map[string][]string{"git diff (all 5000)": {"diff", b2, manyC}}},
		{"revision diff (a 50 MB blob)",
			func() error { _, err := diff.Revision(ctx, repo, diff.Range{Base: b2, Commit: bigC}, lim); return err },
			map[string][]string{"git diff": {"diff", b2, bigC}}},
		{"interdiff of a revision adding a 50 MB blob",
			func() error {
				_, err := diff.Interdiff(ctx, repo, diff.Range{Base: b2, Commit: bigC}, diff.Range{Base: b2, Commit: bigC}, lim)
				return err
			},
			map[string][]string{"git diff --binary | git apply --cached (the plain replay)": nil}},
	}
	for _, c := range cases {
		cm, err := median(runs, c.collab)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Printf("%-52s collab %9s\n", c.name, cm.Round(time.Microsecond))
		peerNames := make([]string, 0, len(c.peers))
		for k := range c.peers {
			peerNames = append(peerNames, k)
		}
		sort.Strings(peerNames)
		for _, p := range peerNames {
			args := c.peers[p]
			var f func() error
			if args == nil {
				f = func() error { return plainReplay(repo, work, b2, bigC) }
			} else {
				f = func() error { return gitDiscard(repo, args...) }
			}
			pm, err := median(runs, f)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			fmt.Printf("%-52s   vs %-28s %9s  ratio %.2f\n", "", p, pm.Round(time.Microsecond), float64(cm)/float64(pm))
		}
	}
	return nil
}

func median(runs int, f func() error) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < runs; i++ {
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

func git(repo string, stdin io.Reader, args ...string) error {
	cmd := exec.Command("git", args...)
	if repo != "" && args[0] != "init" {
		cmd.Args = append([]string{"git", "--git-dir", repo}, args...)
	}
	cmd.Stdin = stdin
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, out)
	}
	return nil
}

func gitDiscard(repo string, args ...string) error {
	cmd := exec.Command("git", append([]string{"--git-dir", repo}, args...)...)
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w", args[0], err)
	}
	return nil
}

func bigBlob(repo string) (string, error) {
	cmd := exec.Command("git", "--git-dir", repo, "hash-object", "-w", "--stdin")
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	w := bufio.NewWriter(in)
	for i := 0; i < 50<<20/64; i++ {
		fmt.Fprintf(w, "%063d\n", i)
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return "", err
	}
	return strings.TrimSpace(out.String()), nil
}

// commitWithBlob makes a commit on parent adding big.txt.
func commitWithBlob(repo, parent, blob string) (string, error) {
	idx := filepath.Join(filepath.Dir(repo), "index.big")
	env := append(os.Environ(), "GIT_INDEX_FILE="+idx, "GIT_AUTHOR_NAME=B", "GIT_AUTHOR_EMAIL=b@x", "GIT_COMMITTER_NAME=B", "GIT_COMMITTER_EMAIL=b@x")
	steps := [][]string{
		{"read-tree", parent},
		{"update-index", "--add", "--cacheinfo", "100644," + blob + ",big.txt"},
	}
	for _, s := range steps {
		cmd := exec.Command("git", append([]string{"--git-dir", repo}, s...)...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", s[0], err, out)
		}
	}
	cmd := exec.Command("git", "--git-dir", repo, "write-tree")
	cmd.Env = env
	tree, err := cmd.Output()
	if err != nil {
		return "", err
	}
	cmd = exec.Command("git", "--git-dir", repo, "commit-tree", strings.TrimSpace(string(tree)), "-p", parent, "-m", "big")
	cmd.Env = env
	c, err := cmd.Output()
	return strings.TrimSpace(string(c)), err
}

// plainReplay is RECIPES.md's replay as it stands: the whole patch through
// git apply into a scratch index.
func plainReplay(repo, work, base, commit string) error {
	idx := filepath.Join(work, "index.plain")
	os.Remove(idx)
	env := append(os.Environ(), "GIT_INDEX_FILE="+idx)
	rt := exec.Command("git", "--git-dir", repo, "read-tree", base)
	rt.Env = env
	if out, err := rt.CombinedOutput(); err != nil {
		return fmt.Errorf("read-tree: %w: %s", err, out)
	}
	sh := exec.Command("sh", "-c", `git --git-dir "$1" diff --binary "$2" "$3" | git --git-dir "$1" apply --cached --3way --allow-empty`, "sh", repo, base, commit)
	sh.Env = env
	if out, err := sh.CombinedOutput(); err != nil {
		return fmt.Errorf("replay: %w: %s", err, out)
	}
	return nil
}
