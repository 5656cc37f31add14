// Command http measures git over HTTP through collab-web against stock
// git http-backend under a plain CGI server from Debian (lighttpd) with no
// hooks, interleaved in one run on the same history: a clone, a push of
// one commit to a branch, and a push of one commit for review (refs/for
// through collab's hooks; a branch on the hookless floor, which has no
// refs/for). collab-web's side authenticates a token and runs the same
// http-backend with collab's hooks; the difference is what collab costs.
//
// One more collab-web shows what internal/hookhost gains: with
// COLLAB_HTTP_RELAY=off the hooks run as processes.
//
// It prints wall medians and the ratios to the floor. Goals (issue 41):
// clone ≤ 1.05×, branch push ≤ 1.10×, refs/for ≤ 1.20×.
//
//	COLLAB_BENCH_HTTP=1 scripts/deps.sh   # lighttpd, for the floor
//	go run ./bench/http [-commits 300] [-runs 15]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/collab-forge/collab/bench/internal/build"
)

const lighttpd = "/usr/sbin/lighttpd"

func main() {
	commits := flag.Int("commits", 300, "commits of history in the repository")
	runs := flag.Int("runs", 15, "rounds (median printed)")
	flag.Parse()
	if err := run(*commits, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench/http:", err)
		os.Exit(1)
	}
}

func median(s []time.Duration) time.Duration {
	c := append([]time.Duration{}, s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c[len(c)/2]
}

func sh(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHTTP(url string) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) { // poll: the server is starting
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
	}
	return fmt.Errorf("%s did not answer", url)
}

func run(commits, runs int) error {
	if _, err := os.Stat(lighttpd); err != nil {
		return fmt.Errorf("no %s: run COLLAB_BENCH_HTTP=1 scripts/deps.sh", lighttpd)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	work, err := os.MkdirTemp("", "collab-bench-http-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "bin")
	if err := build.All(bin); err != nil {
		return err
	}
	root := filepath.Join(work, "root")
	gitEnv := []string{"HOME=" + work, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=B", "GIT_AUTHOR_EMAIL=b@x",
		"GIT_COMMITTER_NAME=B", "GIT_COMMITTER_EMAIL=b@x", "GIT_TERMINAL_PROMPT=0"}
	hook := func(args ...string) (string, error) {
		return sh(work, nil, filepath.Join(bin, "collab-hook"), append([]string{"--root", root}, args...)...)
	}
	for _, s := range [][]string{{"init", "--url", "http://forge.test"}, {"user", "add", "alice"}, {"repo", "create", "demo"}, {"grant", "alice", "demo", "write"}} {
		if _, err := hook(s...); err != nil {
			return err
		}
	}
	out, err := sh(work, []string{"SSH_ORIGINAL_COMMAND=token new --name bench --json"}, filepath.Join(bin, "collab-hook"), "--root", root, "serve", "--as", "alice")
	if err != nil {
		return err
	}
	var tok struct{ Token string }
	if err := json.Unmarshal([]byte(out), &tok); err != nil {
		return fmt.Errorf("token: %v: %s", err, out)
	}

	// The same history in both: collab's repository and a hookless bare one.
	src := filepath.Join(work, "src")
	if _, err := sh(work, gitEnv, "git", "init", "-q", "-b", "main", src); err != nil {
		return err
	}
	for i := 0; i < commits; i++ {
		f := filepath.Join(src, fmt.Sprintf("f%02d.txt", i%50))
		if err := os.WriteFile(f, []byte(strings.Repeat(fmt.Sprintf("line %d\n", i), 40)), 0o644); err != nil {
			return err
		}
		if _, err := sh(src, gitEnv, "git", "add", "."); err != nil {
			return err
		}
		if _, err := sh(src, gitEnv, "git", "commit", "-q", "-m", fmt.Sprintf("commit %d", i)); err != nil {
			return err
		}
	}
	if _, err := sh(src, gitEnv, "git", "push", "-q", filepath.Join(root, "repos", "demo.git"), "HEAD:refs/heads/main"); err != nil {
		return err
	}
	plain := filepath.Join(work, "floor", "plain.git")
	if _, err := sh(work, gitEnv, "git", "clone", "-q", "--bare", src, plain); err != nil {
		return err
	}
	if _, err := sh(plain, gitEnv, "git", "config", "http.receivepack", "true"); err != nil {
		return err
	}

	// collab-web, and lighttpd running git http-backend as plain CGI.
	// collab-web as installed (the root's hooks directory, answered in
	// process), and with the hooks as processes (hookhost's switch).
	variants := []struct{ name, relay string }{{"collab-web", ""}, {"no relay", "off"}}
	ports := make([]int, len(variants))
	for i, v := range variants {
		if ports[i], err = freePort(); err != nil {
			return err
		}
		web := exec.CommandContext(ctx, filepath.Join(bin, "collab-web"), "--root", root, "--listen", fmt.Sprintf("127.0.0.1:%d", ports[i]))
		web.Env = append(os.Environ(), "HOME="+work, "COLLAB_HTTP_RELAY="+v.relay)
		if err := web.Start(); err != nil {
			return err
		}
		defer func() { _ = web.Process.Kill(); _ = web.Wait() }()
	}
	floorPort, err := freePort()
	if err != nil {
		return err
	}
	conf := filepath.Join(work, "lighttpd.conf")
	err = os.WriteFile(conf, []byte(fmt.Sprintf(`server.modules = ("mod_alias", "mod_cgi", "mod_setenv")
server.document-root = %q
server.bind = "127.0.0.1"
server.port = %d
server.errorlog = %q
server.stream-response-body = 2
server.stream-request-body = 2
alias.url = ( "/git" => "/usr/lib/git-core/git-http-backend" )
$HTTP["url"] =~ "^/git" {
  cgi.assign = ( "" => "" )
  setenv.add-environment = ( "GIT_PROJECT_ROOT" => %q, "GIT_HTTP_EXPORT_ALL" => "1", "HOME" => %q )
}
`, work, floorPort, filepath.Join(work, "lighttpd.log"), filepath.Dir(plain), work)), 0o644)
	if err != nil {
		return err
	}
	floor := exec.CommandContext(ctx, lighttpd, "-D", "-f", conf)
	if err := floor.Start(); err != nil {
		return err
	}
	defer func() { _ = floor.Process.Kill(); _ = floor.Wait() }()
	floorURL := fmt.Sprintf("http://127.0.0.1:%d/git/plain.git", floorPort)
	for _, p := range ports {
		if err := waitHTTP(fmt.Sprintf("http://127.0.0.1:%d/healthz", p)); err != nil {
			return err
		}
	}
	if err := waitHTTP(floorURL + "/info/refs?service=git-upload-pack"); err != nil {
		return err
	}
	auth := []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=Authorization: Bearer " + tok.Token}

	type side struct {
		n    int // its index, in ref names and patch ids
		name string
		url  string
		env  []string
		wc   string // a clone to push from
	}
	withAuth := append(append([]string{}, gitEnv...), auth...)
	var sides []*side
	for i, v := range variants {
		sides = append(sides, &side{name: v.name, url: fmt.Sprintf("http://127.0.0.1:%d/demo.git", ports[i]), env: withAuth})
	}
	sides = append(sides, &side{name: "http-backend", url: floorURL, env: gitEnv})
	for i, s := range sides {
		s.n = i
		s.wc = filepath.Join(work, fmt.Sprintf("wc-%d", i))
		if _, err := sh(work, s.env, "git", "clone", "-q", s.url, s.wc); err != nil {
			return err
		}
	}
	times := map[string]map[string][]time.Duration{}
	measure := func(op string, s *side, fn func() error) error {
		start := time.Now()
		if err := fn(); err != nil {
			return fmt.Errorf("%s %s: %w", op, s.name, err)
		}
		if times[op] == nil {
			times[op] = map[string][]time.Duration{}
		}
		times[op][s.name] = append(times[op][s.name], time.Since(start))
		return nil
	}
	for i := 0; i < runs; i++ {
		// Alternate which side goes first, so neither always meets a warm
		// or a cold page cache.
		order := append([]*side{}, sides...)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, s := range order {
			dst := filepath.Join(work, fmt.Sprintf("clone-%s-%d", s.name, i))
			if err := measure("clone", s, func() error { _, err := sh(work, s.env, "git", "clone", "-q", s.url, dst); return err }); err != nil {
				return err
			}
			os.RemoveAll(dst)
			if _, err := sh(s.wc, s.env, "git", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("branch %d", i)); err != nil {
				return err
			}
			if err := measure("branch push", s, func() error {
				_, err := sh(s.wc, s.env, "git", "push", "-q", "origin", fmt.Sprintf("HEAD:refs/heads/b%d-%d", s.n, i))
				return err
			}); err != nil {
				return err
			}
			if _, err := sh(s.wc, s.env, "git", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("review %d", i),
				"--trailer", fmt.Sprintf("Patch: %08x%032x", s.n+1, i+1)); err != nil {
				return err
			}
			target := "HEAD:refs/for/main"
			if s.name == "http-backend" {
				target = fmt.Sprintf("HEAD:refs/heads/r%d-%d", s.n, i) // no refs/for without hooks
			}
			if err := measure("refs/for push", s, func() error { _, err := sh(s.wc, s.env, "git", "push", "-q", "origin", target); return err }); err != nil {
				return err
			}
		}
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "git over HTTP, %d commits of history, %d rounds interleaved (median wall)\n", commits, runs)
	fmt.Fprintf(w, "%-14s", "")
	for _, v := range variants {
		fmt.Fprintf(w, " %12s", v.name)
	}
	fmt.Fprintf(w, " %14s", "http-backend")
	for _, v := range variants {
		fmt.Fprintf(w, " %12s", v.name)
	}
	fmt.Fprintf(w, " %6s\n", "goal")
	for _, op := range []struct {
		name string
		goal float64
	}{{"clone", 1.05}, {"branch push", 1.10}, {"refs/for push", 1.20}} {
		f := median(times[op.name]["http-backend"])
		fmt.Fprintf(w, "%-14s", op.name)
		for _, v := range variants {
			fmt.Fprintf(w, " %10.1fms", ms(median(times[op.name][v.name])))
		}
		fmt.Fprintf(w, " %12.1fms", ms(f))
		for _, v := range variants {
			fmt.Fprintf(w, " %11.2fx", float64(median(times[op.name][v.name]))/float64(f))
		}
		fmt.Fprintf(w, " %5.2fx\n", op.goal)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
