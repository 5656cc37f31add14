// Command pages measures what a page costs collab-web when a visitor
// makes its URL or its repository large (issue 39), on the real binaries:
//
//   - a long URL (40 KB, over the 16 KiB cap: 414) and the deepest URL
//     under both caps (4,096 segments, a missing path: 404) against the
//     ordinary tree page of the same repository (goal: ≤ 1.1×);
//   - the overview of a repository with 10,000 branches (each its own
//     commit, loose refs as pushes leave them) against one with 10 (goal:
//     ≤ 2×); its first view sorts them all (the "first wall" column),
//     later ones read the order remembered while the refs are unchanged,
//     and a second collab-web with COLLAB_BRANCH_ORDER=off sorts them at
//     every view (what remembering gains).
//
// Both collab-webs run with COLLAB_CODE_CACHE=off: a page viewed again
// through the memo starts no git, and what is measured is what a visitor
// can make it run. The figure is collab-web's CPU time per request (user+sys of it and of
// the git processes it waited for, from /proc), the median of interleaved
// rounds, with the wall time seen on loopback beside it.
//
//	go run ./bench/pages [-n 200] [-branches 10000]
package main

import (
	"bufio"
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
)

func main() {
	n := flag.Int("n", 200, "requests of each kind")
	branches := flag.Int("branches", 10_000, "branches of the big repository")
	flag.Parse()
	if err := run(*n, *branches); err != nil {
		fmt.Fprintln(os.Stderr, "bench/pages:", err)
		os.Exit(1)
	}
}

func run(n, branches int) error {
	work, err := os.MkdirTemp("", "collab-bench-pages-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := build.All(work); err != nil {
		return err
	}
	hook, web := filepath.Join(work, "collab-hook"), filepath.Join(work, "collab-web")
	root := filepath.Join(work, "root")
	for _, args := range [][]string{
		{"init", "--url", "http://bench.test"},
		{"repo", "create", "small", "--public"},
		{"repo", "create", "big", "--public"},
	} {
		if out, err := exec.Command(hook, append([]string{"--root", root}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("collab-hook %v: %v\n%s", args, err, out)
		}
	}
	start := time.Now()
	if err := fill(filepath.Join(root, "repos", "small.git"), 10); err != nil {
		return err
	}
	if err := fill(filepath.Join(root, "repos", "big.git"), branches); err != nil {
		return err
	}
	fmt.Printf("repositories with 10 and %d branches made in %s\n", branches, time.Since(start).Round(time.Millisecond))

	// collab-web as installed, and one that does not remember branch
	// orders (browse.OrderOffVar), for what that trick gains; both with
	// the memo off (browse.MemoOffVar), since what is measured here is
	// the git a visitor's URL makes collab-web run, and remembered pages
	// run none.
	type server struct {
		base string
		pid  int
	}
	var stops []func()
	launch := func(env ...string) (server, error) {
		addr, err := freeAddr()
		if err != nil {
			return server{}, err
		}
		cmd := exec.Command(web, "--root", root, "--listen", addr)
		cmd.Env, cmd.Stderr = append(append(os.Environ(), "COLLAB_CODE_CACHE=off"), env...), io.Discard
		if err := cmd.Start(); err != nil {
			return server{}, err
		}
		stops = append(stops, func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
		return server{"http://" + addr, cmd.Process.Pid}, waitUp("http://" + addr)
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	web1, err := launch()
	if err != nil {
		return err
	}
	web2, err := launch("COLLAB_BRANCH_ORDER=off")
	if err != nil {
		return err
	}

	tree := "/small/-/tree/main/src"
	cases := []struct {
		name, path string
		status     int
		at         server
	}{
		{"tree page (ordinary)", tree, 200, web1},
		{"long URL, 40 KB (414)", tree + "/" + strings.Repeat("a/", 20_000), 414, web1},
		{"deepest under the caps, 4096 segments (404)", "/small/-/tree/main/" + strings.Repeat("a/", 4096), 404, web1},
		{"overview, 10 branches", "/small", 200, web1},
		{fmt.Sprintf("overview, %d branches", branches), "/big", 200, web1},
		{fmt.Sprintf("the same, order not remembered (%s=off)", "COLLAB_BRANCH_ORDER"), "/big", 200, web2},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	cpus := make([][]time.Duration, len(cases))
	walls := make([][]time.Duration, len(cases))
	size := make([]int, len(cases))
	first := make([]time.Duration, len(cases)) // the first view's wall time
	for round := -5; round < n; round++ {      // interleaved; 5 warm-up rounds
		for i, c := range cases {
			c0, t0 := cpu(c.at.pid), time.Now()
			res, err := client.Get(c.at.base + c.path)
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			wall, used := time.Since(t0), cpu(c.at.pid)-c0
			if res.StatusCode != c.status {
				return fmt.Errorf("%s: status %d, want %d: %.200s", c.name, res.StatusCode, c.status, b)
			}
			if round == -5 {
				first[i] = wall
			}
			if round >= 0 {
				cpus[i], walls[i], size[i] = append(cpus[i], used), append(walls[i], wall), len(b)
			}
		}
	}
	fmt.Printf("\n%-46s %10s %10s %10s %10s %9s\n", "request (median of "+fmt.Sprint(n)+")", "cpu", "cpu mean", "wall", "first wall", "bytes")
	mean := func(ds []time.Duration) time.Duration {
		var s time.Duration
		for _, d := range ds {
			s += d
		}
		return s / time.Duration(len(ds))
	}
	means := make([]time.Duration, len(cases))
	for i, c := range cases {
		means[i] = mean(cpus[i])
		fmt.Printf("%-46s %10s %10s %10s %10s %9d\n", c.name, ms(median(cpus[i])), ms(means[i]), ms(median(walls[i])), ms(first[i]), size[i])
	}
	// CPU time is counted in ticks of 10 ms: the means carry the ratio.
	ratio := func(a, b int) float64 { return float64(means[a]) / float64(max(means[b], 1)) }
	wratio := func(a, b int) float64 { return float64(median(walls[a])) / float64(max(median(walls[b]), 1)) }
	fmt.Printf("\nlong URL / tree page:            cpu %.2fx  wall %.2fx  (goal <= 1.1x)\n", ratio(1, 0), wratio(1, 0))
	fmt.Printf("deepest URL / tree page:         cpu %.2fx  wall %.2fx\n", ratio(2, 0), wratio(2, 0))
	fmt.Printf("overview %d / 10 branches:    cpu %.2fx  wall %.2fx  (goal <= 2x)\n", branches, ratio(4, 3), wratio(4, 3))
	fmt.Printf("  order not remembered:          cpu %.2fx  wall %.2fx\n", ratio(5, 3), wratio(5, 3))
	return nil
}

// fill writes, with git fast-import, a main branch (a README and a src
// directory of 50 files) and branches-1 more branches, each its own commit
// on main with its own date, so that sorting them reads every one.
func fill(repo string, branches int) error {
	cmd := exec.Command("git", "--git-dir", repo, "fast-import", "--quiet")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
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
	data := func(s string) { fmt.Fprintf(w, "data %d\n%s\n", len(s), s) }
	fmt.Fprintf(w, "commit refs/heads/main\nmark :1\ncommitter B <b@example.com> 1700000000 +0000\n")
	data("Start\n")
	fmt.Fprintf(w, "M 100644 inline README.md\n")
	data("# Bench\n\nA repository for bench/pages.\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(w, "M 100644 inline src/f%02d.go\n", i)
		data(fmt.Sprintf("package src\n\nvar F%02d = %d\n", i, i))
	}
	w.WriteString("\n")
	for i := 1; i < branches; i++ {
		fmt.Fprintf(w, "commit refs/heads/b%05d\ncommitter B <b@example.com> %d +0000\n", i, 1700000000+i)
		data(fmt.Sprintf("Branch %d\n", i))
		fmt.Fprintf(w, "from :1\n")
		fmt.Fprintf(w, "M 100644 inline b.txt\n")
		data(fmt.Sprintf("%d\n", i))
		w.WriteString("\n")
	}
	if err := w.Flush(); err != nil {
		return err
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("fast-import: %v: %s", err, errb.String())
	}
	return nil
}

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

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

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
