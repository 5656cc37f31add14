package main

// The request budgets (issue 14) and the code pages (issue 17), measured
// on the real binaries: an issue with 20 comments of 1 MiB, a patch of 200
// files of 3 MB whose base moved between its two revisions (its page and
// its interdiff), each viewed by three clients at once; and the blob page
// of a 1 MB file and the patch page of an ordinary 200-file revision
// against git show / git diff of the same objects.
//
// Server time is the CPU time (user+sys) of collab-web and the git
// processes it ran (the children it waited for), read from /proc; extra
// RSS is collab-web's peak (VmHWM) above what it held before the case.
// Each case runs on a freshly started collab-web so that peaks do not
// carry over.

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/issues"
)

// budgetForge is a forge root made by the real collab-hook, with one
// public repository "bench" holding the histories below.
type budgetForge struct {
	root, repo, work string
	hook, web        string
	issue            string
	base, rev        map[string]string // named commits
}

func runBudgets(work, hookBin, webBin string, reps int) error {
	ctx := context.Background()
	f := &budgetForge{root: filepath.Join(work, "broot"), hook: hookBin, web: webBin, work: work}
	start := time.Now()
	if err := f.setup(ctx); err != nil {
		return err
	}
	fmt.Printf("\nbudget forge built in %s\n", time.Since(start).Round(time.Millisecond))

	fmt.Printf("\n%-52s %10s %10s %12s %10s %s\n", "case (3 concurrent viewers)", "cpu/view", "wall max", "extra RSS", "bytes", "status")
	cases := []struct{ name, path string }{
		{"issue: 20 comments of 1 MiB (first view)", "/bench/-/issues/" + f.issue},
		{"patch: 200 files of 3 MB, moved base, rev 2", "/bench/-/patches/" + patchID + "?rev=2"},
		{"interdiff: 200 files of 3 MB, 1 -> 2", "/bench/-/patches/" + patchID + "?from=1&to=2"},
		{"patch: 200 files of 3 MB, split view", "/bench/-/patches/" + patchID + "?rev=2&view=split"},
	}
	for _, c := range cases {
		for round := 1; round <= 2; round++ {
			if err := f.concurrent(c.name, c.path, round); err != nil {
				return err
			}
		}
	}
	fmt.Printf("goal: cpu/view <= 1 s and extra RSS <= 64 MB\n")

	fmt.Printf("\n%-44s %12s %12s %8s\n", "page vs stock git (cpu per request, warm)", "collab-web", "git", "ratio")
	blobOID := f.rev["blobfile"]
	if err := f.ratio("blob page, 1 MB file vs git cat-file -p", "/bench/-/blob/main/big/source.go",
		[]string{"cat-file", "-p", blobOID}, reps); err != nil {
		return err
	}
	if err := f.ratio("blob page, 1 MB file vs git show REV:PATH", "/bench/-/blob/main/big/source.go",
		[]string{"show", f.base["base1"] + ":big/source.go"}, reps); err != nil {
		return err
	}
	if err := f.ratio("patch page, 200-file revision vs git diff", "/bench/-/patches/"+smallPatchID,
		[]string{"diff", f.base["small-base"], f.rev["small"]}, reps); err != nil {
		return err
	}
	if err := f.ratio("patch page, 200 x 3 MB vs git diff (whole)", "/bench/-/patches/"+patchID+"?rev=2",
		[]string{"diff", f.base["base2"], f.rev["r2"]}, max(reps/5, 2)); err != nil {
		return err
	}
	return nil
}

const (
	patchID      = "b16b16b16b16b16b16b16b16b16b16b16b16b16b"
	smallPatchID = "5a115a115a115a115a115a115a115a115a115a11"
)

func (f *budgetForge) run(name string, env []string, dir string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

func (f *budgetForge) gitEnv() []string {
	return []string{"GIT_AUTHOR_NAME=Bench", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=Bench",
		"GIT_COMMITTER_EMAIL=b@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + f.work}
}

func (f *budgetForge) setup(ctx context.Context) error {
	for _, args := range [][]string{
		{"init", "--url", "http://bench.test"},
		{"repo", "create", "bench", "--public"},
		{"user", "add", "alice"},
		{"grant", "alice", "bench", "write"},
	} {
		if err := f.run(f.hook, nil, "", append([]string{"--root", f.root}, args...)...); err != nil {
			return err
		}
	}
	f.repo = filepath.Join(f.root, "repos", "bench.git")
	// The histories go straight into the repository with git fast-import
	// (writing 1.2 GB of work tree would take longer than the measurement),
	// on side branches; pushes through the hooks then turn them into
	// patch revisions without sending a byte.
	if err := f.importHistories(); err != nil {
		return err
	}
	client := filepath.Join(f.work, "client")
	env := f.gitEnv()
	steps := [][]string{
		{"clone", "-q", "--no-local", f.repo, client},
	}
	for _, s := range steps {
		if err := f.run("git", env, f.work, s...); err != nil {
			return err
		}
	}
	for _, s := range [][]string{
		{"push", "-q", "origin", "origin/bench/r1:refs/for/main"},
		{"push", "-q", "origin", "origin/bench/base2:refs/heads/main"},
		{"push", "-q", "origin", "origin/bench/r2:refs/for/main"},
		{"push", "-q", "origin", "origin/bench/small-base:refs/heads/main"},
		{"push", "-q", "origin", "origin/bench/small:refs/for/main"},
	} {
		if err := f.run("git", append(env, "COLLAB_PRINCIPAL=alice"), client, s...); err != nil {
			return err
		}
	}
	// An issue with 20 comments of 1 MiB, written as the API would.
	root, err := forge.New(f.root)
	if err != nil {
		return err
	}
	db, err := root.Open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	body := strings.Repeat("A long comment, *with* some `markdown` in it, repeated. ", (issues.MaxBody-64)/57)
	return db.Write(ctx, func(tx *sql.Tx) error {
		is, err := issues.New(ctx, tx, "bench.git", "alice", "Twenty comments of 1 MiB", "", time.Now())
		if err != nil {
			return err
		}
		f.issue = is.ID
		for i := 0; i < 20; i++ {
			if _, err := issues.AddComment(ctx, tx, "bench.git", is.ID, "alice", body, time.Now()); err != nil {
				return err
			}
		}
		return nil
	})
}

// importHistories writes, with git fast-import into the repository:
// base1 (200 files of 3 MB, a 1 MB Go file, a README) on main; r1, which
// changes a line in each of the 200 files; base2, base1 with the README
// changed (the base moves); r2, r1's change on base2 plus one more line;
// and small-base/small, an ordinary revision changing 200 files of 4 KB.
func (f *budgetForge) importHistories() error {
	cmd := exec.Command("git", "--git-dir", f.repo, "fast-import", "--quiet", "--export-marks="+filepath.Join(f.work, "marks"))
	cmd.Env = append(os.Environ(), f.gitEnv()...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return err
	}
	w := bufio.NewWriterSize(in, 1<<20)
	mark := 0
	blob := func(data []byte) string {
		mark++
		fmt.Fprintf(w, "blob\nmark :%d\ndata %d\n", mark, len(data))
		w.Write(data)
		w.WriteString("\n")
		return fmt.Sprintf(":%d", mark)
	}
	commit := func(ref, msg, from string, files map[string]string) string {
		mark++
		m := fmt.Sprintf(":%d", mark)
		fmt.Fprintf(w, "commit %s\nmark %s\ncommitter Bench <b@example.com> %d +0000\ndata %d\n%s\n", ref, m, 1700000000+mark, len(msg), msg)
		if from != "" {
			fmt.Fprintf(w, "from %s\n", from)
		}
		names := make([]string, 0, len(files))
		for n := range files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "M 100644 %s %s\n", files[n], n)
		}
		w.WriteString("\n")
		return m
	}
	big := func(file int, change map[int]string) []byte {
		var b strings.Builder
		b.Grow(3 << 20)
		for l := 0; b.Len() < 3_000_000; l++ {
			if s, ok := change[l]; ok {
				b.WriteString(s + "\n")
				continue
			}
			fmt.Fprintf(&b, "file %03d line %06d: the quick brown fox jumps over the lazy dog %d\n", file, l, l*file)
		}
		return []byte(b.String())
	}
	var src strings.Builder
	for i := 0; src.Len() < 1_000_000; i++ {
		fmt.Fprintf(&src, "// f%d adds its argument to %d.\nfunc f%d(x int) int {\n\treturn x + %d // \"%d\"\n}\n\n", i, i, i, i, i)
	}
	base1 := map[string]string{"README.md": blob([]byte("# Bench\n\nThe budget benchmark's repository.\n")),
		"big/source.go": blob([]byte("package big\n\n" + src.String()))}
	r1 := map[string]string{}
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("data/f%03d.txt", i)
		base1[name] = blob(big(i, nil))
		r1[name] = blob(big(i, map[int]string{20000: "revision one changed this line"}))
	}
	m := map[string]string{}
	m["base1"] = commit("refs/heads/main", "base", "", base1)
	commit("refs/heads/bench/base1", "base", "", base1)
	m["r1"] = commit("refs/heads/bench/r1", "Change 200 big files\n\nPatch: "+patchID+"\n", m["base1"], r1)
	m["base2"] = commit("refs/heads/bench/base2", "Move the base", m["base1"], map[string]string{"README.md": blob([]byte("# Bench\n\nMoved.\n"))})
	r2 := map[string]string{}
	for k, v := range r1 {
		r2[k] = v
	}
	r2["data/f000.txt"] = blob(big(0, map[int]string{20000: "revision one changed this line", 30000: "revision two too"}))
	m["r2"] = commit("refs/heads/bench/r2", "Change 200 big files\n\nPatch: "+patchID+"\n", m["base2"], r2)
	small, smallNew := map[string]string{}, map[string]string{}
	for i := 0; i < 200; i++ {
		var b, c strings.Builder
		for l := 0; l < 100; l++ {
			line := fmt.Sprintf("func small%d_%d() int { return %d } // some ordinary source text\n", i, l, l)
			b.WriteString(line)
			if l == 50 {
				line = fmt.Sprintf("func small%d_%d() int { return %d + 1 } // changed\n", i, l, l)
			}
			c.WriteString(line)
		}
		name := fmt.Sprintf("small/s%03d.go", i)
		small[name], smallNew[name] = blob([]byte(b.String())), blob([]byte(c.String()))
	}
	m["small-base"] = commit("refs/heads/bench/small-base", "Small files", m["base2"], small)
	m["small"] = commit("refs/heads/bench/small", "Change 200 small files\n\nPatch: "+smallPatchID+"\n", m["small-base"], smallNew)
	if err := w.Flush(); err != nil {
		return err
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("fast-import: %v: %s", err, errb.String())
	}
	marks, err := os.ReadFile(filepath.Join(f.work, "marks"))
	if err != nil {
		return err
	}
	oids := map[string]string{}
	for _, l := range strings.Split(string(marks), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			oids[k] = v
		}
	}
	f.base = map[string]string{"base1": oids[m["base1"]], "base2": oids[m["base2"]], "small-base": oids[m["small-base"]]}
	f.rev = map[string]string{"r1": oids[m["r1"]], "r2": oids[m["r2"]], "small": oids[m["small"]], "blobfile": oids[base1["big/source.go"]]}
	return nil
}

// proc is a started collab-web.
type proc struct {
	cmd  *exec.Cmd
	base string
}

func (f *budgetForge) start() (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(f.web, "--root", f.root, "--listen", addr)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, base: "http://" + addr}
	if err := waitUp(p.base); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *proc) stop() { _ = p.cmd.Process.Signal(os.Interrupt); _ = p.cmd.Wait() }

// cpu is the CPU time of pid and of the children it waited for.
func cpu(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		var v int64
		fmt.Sscan(f[i], &v)
		ticks += v
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// concurrent starts a fresh collab-web, then has three clients get path
// at once (round 2: twice, the second time measured: warm caches).
func (f *budgetForge) concurrent(name, path string, round int) error {
	p, err := f.start()
	if err != nil {
		return err
	}
	defer p.stop()
	pid := p.cmd.Process.Pid
	get := func() (int, int, time.Duration, error) {
		t0 := time.Now()
		res, err := http.Get(p.base + path)
		if err != nil {
			return 0, 0, 0, err
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, int(n), time.Since(t0), nil
	}
	if round == 2 {
		if _, _, _, err := get(); err != nil {
			return err
		}
	}
	rss0, _ := memory(pid)
	cpu0 := cpu(pid)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var walls []time.Duration
	statuses := map[int]int{}
	size := 0
	var ferr error
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, n, d, err := get()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				ferr = err
				return
			}
			walls = append(walls, d)
			statuses[st]++
			size = max(size, n)
		}()
	}
	wg.Wait()
	if ferr != nil {
		return ferr
	}
	used := cpu(pid) - cpu0
	_, hwm := memory(pid)
	sort.Slice(walls, func(i, j int) bool { return walls[i] < walls[j] })
	label := name
	if round == 2 {
		label = strings.Replace(name, "(first view)", "(warm)", 1)
		if label == name {
			label += " (warm)"
		}
	}
	fmt.Printf("%-52s %10s %10s %9d MB %10d %v\n", label, ms(used/3), ms(walls[len(walls)-1]), (hwm-rss0)>>10, size, statuses)
	return nil
}

// ratio compares the server CPU of reps gets of path with the CPU of
// reps runs of git args on the same repository, interleaved.
func (f *budgetForge) ratio(name, path string, gitArgs []string, reps int) error {
	p, err := f.start()
	if err != nil {
		return err
	}
	defer p.stop()
	pid := p.cmd.Process.Pid
	client := &http.Client{}
	warm := func() error {
		res, err := client.Get(p.base + path)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("%s: status %d", path, res.StatusCode)
		}
		return nil
	}
	c0 := cpu(pid)
	if err := warm(); err != nil {
		return err
	}
	cold := cpu(pid) - c0
	var web, git time.Duration
	for i := 0; i < reps; i++ {
		c0 := cpu(pid)
		if err := warm(); err != nil {
			return err
		}
		web += cpu(pid) - c0
		cmd := exec.Command("git", append([]string{"--git-dir", f.repo}, gitArgs...)...)
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %v: %w", gitArgs, err)
		}
		git += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	web, git = web/time.Duration(reps), git/time.Duration(reps)
	r := 0.0
	if git > 0 {
		r = float64(web) / float64(git)
	}
	fmt.Printf("%-44s %12s %12s %7.2fx   (first view %s: %.1fx)\n", name, ms(web), ms(git), r, ms(cold), float64(cold)/float64(max(git, 1)))
	return nil
}
