package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

const repo = "bench"

// forge is one collab root with its clients, the binaries that serve it
// and the collab-web that runs while a core count is measured.
type forge struct {
	work, bin, root, home string
	standin               string // GIT_SSH_COMMAND: sshd's part, then the forced command
	env                   []string
	clients               []*client
	prepared              map[string]int // clients ready for each mix
	// floor is the mean wall time of the noop verb with one client, by
	// core count: what any verb pays before its own work.
	floor map[int]time.Duration

	web     *exec.Cmd
	webURL  string
	webLog  string
	webDone chan error
	http    *http.Client

	// db is the record's PostgreSQL URL ("": SQLite). hosts are the
	// roots of the other forge hosts on it (-webs), each with a collab-web
	// of its own (others) at webURLs[1:]; the API clients take turns over
	// the collab-webs, and the verbs over the roots (rootOf).
	db      string
	webDB   string // collab-web's --db, "" for db
	hosts   []string
	others  []*exec.Cmd
	done    []chan error // others' exits
	webURLs []string
}

// client is one agent: a principal with its own issue, token and clones.
type client struct {
	i      int
	name   string
	issue  string // the issue it leases and comments on
	read   string // the issue api-read fetches
	token  string
	patch  string // the Patch: trailer of its refs/for pushes
	rf, br string // its clones for refsfor and branch
	seq    int    // commits made, for distinct commit messages
	phase  int    // lease: 0 acquire, 1 renew, 2 release
	// claimed is the issue next last claimed, until it releases it
	claimed string
	// revised: rf holds the patch's commit, which each push amends
	revised bool
}

func numCPU() int { return runtime.NumCPU() }

// startOf is what an operation of m spends starting the processes that
// serve it: the noop verb's floor for a verb or a push (one forced
// command each; a push starts git and the hooks on top), none over HTTP.
func (f *forge) startOf(m *mix, cores int) time.Duration {
	if strings.HasPrefix(m.name, "api-") {
		return 0
	}
	return f.floor[cores]
}

// setup makes a root with repository bench (one commit on main) and the
// settings a load test needs, for at most most clients at once; the
// clients themselves come later, as levels need them.
func setup(ctx context.Context, work, bin string, most int, db string, webs int) (*forge, error) {
	f := &forge{db: db,
		work: work, bin: bin, root: filepath.Join(work, "root"), home: filepath.Join(work, "home"),
		prepared: map[string]int{}, floor: map[int]time.Duration{}, http: &http.Client{Timeout: 2 * time.Minute,
			Transport: &http.Transport{MaxIdleConnsPerHost: most}},
	}
	if err := os.MkdirAll(f.home, 0o755); err != nil {
		return nil, err
	}
	f.env = []string{"HOME=" + f.home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com",
		// No journal: the entries go to ROOT/log/collab-hook.log, which is
		// read back for the lock fields.
		"COLLAB_JOURNAL_SOCKET=" + filepath.Join(work, "no-journal")}
	f.standin = filepath.Join(work, "ssh-standin")
	// What sshd does with a forced command: the client's command goes in
	// SSH_ORIGINAL_COMMAND. CAP_AS names the key's principal and CAP_CPUS
	// the forge's cores.
	script := fmt.Sprintf("#!/bin/sh\nfor last; do :; done\nSSH_ORIGINAL_COMMAND=$last exec taskset -c \"$CAP_CPUS\" %s --root %s serve --as \"$CAP_AS\"\n",
		f.forced(), f.root)
	if err := os.WriteFile(f.standin, []byte(script), 0o755); err != nil {
		return nil, err
	}
	initArgs := []string{"init", "--url", "http://forge.test"}
	if db != "" {
		initArgs = append(initArgs, "--db", db)
	}
	for _, args := range [][]string{
		initArgs,
		{"repo", "create", repo},
		// Each client is its own principal; the defaults (100 writes a
		// second) would stop one fast client, which is not the question.
		{"config", "set", "rate_burst", "1000000"},
		{"config", "set", "rate_refill", "1000000"},
	} {
		if _, err := f.admin(ctx, args...); err != nil {
			return nil, err
		}
	}
	for k := 1; k < webs; k++ {
		if err := f.addHost(ctx, filepath.Join(work, fmt.Sprintf("root%d", k+1))); err != nil {
			return nil, err
		}
	}
	seed := filepath.Join(work, "seed")
	if _, err := f.git(ctx, work, "init", "-q", "-b", "main", seed); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("capacity\n"), 0o644); err != nil {
		return nil, err
	}
	if _, err := f.git(ctx, seed, "add", "README"); err != nil {
		return nil, err
	}
	if _, err := f.git(ctx, seed, "commit", "-q", "-m", "seed"); err != nil {
		return nil, err
	}
	c, err := f.client(ctx, 0)
	if err != nil {
		return nil, err
	}
	if _, err := f.gitAs(ctx, c, 0, seed, "push", "-q", f.url(), "main"); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *forge) url() string { return "ssh://forge.test/" + repo + ".git" }

func (f *forge) admin(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(f.bin, "collab-hook"), append([]string{"--root", f.root}, args...)...)
	cmd.Env = f.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("collab-hook %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (f *forge) git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = dir, f.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// gitCmd is git as c, reaching the forge through the stand-in with the
// forge's processes on cores (0: both).
func (f *forge) gitCmd(ctx context.Context, c *client, cores int, dir string, args ...string) *exec.Cmd {
	if cores == 0 {
		cores = numCPU()
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, f.env...), "GIT_SSH_COMMAND="+f.standin, "GIT_SSH_VARIANT=ssh",
		"CAP_AS="+c.name, "CAP_CPUS="+cpuList(cores), "GOMAXPROCS="+strconv.Itoa(cores))
	return cmd
}

func (f *forge) gitAs(ctx context.Context, c *client, cores int, dir string, args ...string) (string, error) {
	out, err := f.gitCmd(ctx, c, cores, dir, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s as %s: %v: %s", strings.Join(args, " "), c.name, err, out)
	}
	return string(out), nil
}

// forced is the binary of the forced command as the forge writes it (in
// the authorized_keys lines keys-command answers): collab-hook-pg where
// the record is on PostgreSQL, which collab-hook would hand the run to.
func (f *forge) forced() string {
	if f.db != "" {
		return filepath.Join(f.bin, "collab-hook-pg")
	}
	return filepath.Join(f.bin, "collab-hook")
}

// serveCmd is `collab-hook serve --as who` as sshd starts it for line,
// on cores (0: both).
func (f *forge) serveCmd(ctx context.Context, who string, cores int, line string) *exec.Cmd {
	return f.serveCmdAt(ctx, f.root, who, cores, line)
}

// serveCmdAt is serveCmd on the host whose root is root.
func (f *forge) serveCmdAt(ctx context.Context, root, who string, cores int, line string) *exec.Cmd {
	if cores == 0 {
		cores = numCPU()
	}
	cmd := exec.CommandContext(ctx, "taskset", "-c", cpuList(cores), f.forced(), "--root", root, "serve", "--as", who)
	cmd.Env = append(append([]string{}, f.env...), "SSH_ORIGINAL_COMMAND="+line, "GOMAXPROCS="+strconv.Itoa(cores))
	return cmd
}

// serveJSON runs a verb with --json outside the measurement and decodes it.
func (f *forge) serveJSON(ctx context.Context, who, line string, v any) error {
	var stderr bytes.Buffer
	cmd := f.serveCmd(ctx, who, 0, line+" --json")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s as %s: %v: %s", line, who, err, stderr.String())
	}
	return json.Unmarshal(out, v)
}

// rootOf is the root of the host client c's verbs go to: the hosts take
// turns, as the API clients do over their collab-webs.
func (f *forge) rootOf(c *client) string {
	if i := c.i % (1 + len(f.hosts)); i > 0 {
		return f.hosts[i-1]
	}
	return f.root
}

// client returns client i, making its principal (write access to bench),
// its two issues and its API token the first time.
func (f *forge) client(ctx context.Context, i int) (*client, error) {
	for len(f.clients) <= i {
		f.clients = append(f.clients, nil)
	}
	if c := f.clients[i]; c != nil {
		return c, nil
	}
	c := &client{i: i, name: fmt.Sprintf("agent%d", i), patch: fmt.Sprintf("%040x", 0xca9ac17e0000+i)}
	if _, err := f.admin(ctx, "user", "add", c.name); err != nil {
		return nil, err
	}
	if _, err := f.admin(ctx, "grant", c.name, repo, "write"); err != nil {
		return nil, err
	}
	var is struct{ ID string }
	if err := f.serveJSON(ctx, c.name, "issue new "+repo+" --title 'work of "+c.name+"'", &is); err != nil {
		return nil, err
	}
	c.issue = is.ID
	if err := f.serveJSON(ctx, c.name, "issue new "+repo+" --title 'read by "+c.name+"' --body 'what an agent reads before it starts'", &is); err != nil {
		return nil, err
	}
	c.read = is.ID
	var tok struct{ Token string }
	if err := f.serveJSON(ctx, c.name, "token new", &tok); err != nil {
		return nil, err
	}
	c.token = tok.Token
	f.clients[i] = c
	return c, nil
}

// ready makes clients 0..n-1 and whatever m needs of each.
func (f *forge) ready(ctx context.Context, m *mix, n int) error {
	for i := 0; i < n; i++ {
		c, err := f.client(ctx, i)
		if err != nil {
			return err
		}
		if i < f.prepared[m.name] || m.prepare == nil {
			continue
		}
		if err := m.prepare(ctx, f, c); err != nil {
			return err
		}
	}
	f.prepared[m.name] = max(f.prepared[m.name], n)
	return nil
}

// clone makes c's clone dir of bench.
func (f *forge) clone(ctx context.Context, c *client, dir string) error {
	_, err := f.gitAs(ctx, c, 0, f.work, "clone", "-q", f.url(), dir)
	return err
}

// commit makes one new commit in dir: a changed file, so that every push
// carries one new blob, tree and commit.
func (f *forge) commit(ctx context.Context, c *client, dir string, amend bool, trailer string) error {
	c.seq++
	if err := os.WriteFile(filepath.Join(dir, c.name), []byte(fmt.Sprintf("%s %d\n", c.name, c.seq)), 0o644); err != nil {
		return err
	}
	if _, err := f.git(ctx, dir, "add", c.name); err != nil {
		return err
	}
	args := []string{"commit", "-q", "-m", fmt.Sprintf("%s change %d", c.name, c.seq)}
	if trailer != "" {
		args = append(args, "-m", "Patch: "+trailer)
	}
	if amend {
		args = append(args, "--amend")
	}
	_, err := f.git(ctx, dir, args...)
	return err
}

// addHost makes another host's root on the same record: the same
// repositories (a symlink, as a shared mount) and forge key.
func (f *forge) addHost(ctx context.Context, root string) error {
	if err := os.MkdirAll(root, 0o750); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(f.root, "repos"), filepath.Join(root, "repos")); err != nil {
		return err
	}
	key, err := os.ReadFile(filepath.Join(f.root, "forge.key"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "forge.key"), key, 0o600); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(f.bin, "collab-hook"), "--root", root, "init", "--db", f.db, "--url", "http://forge.test")
	cmd.Env = f.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("init host %s: %v\n%s", root, err, out)
	}
	f.hosts = append(f.hosts, root)
	return nil
}

// startWeb starts collab-web on cores on a free port and waits for it,
// and one for each other host.
func (f *forge) startWeb(ctx context.Context, cores int) error {
	if err := f.startOneWeb(ctx, cores, f.root); err != nil {
		return err
	}
	f.webURLs = []string{f.webURL}
	primary, primaryDone, primaryURL := f.web, f.webDone, f.webURL
	for _, root := range f.hosts {
		if err := f.startOneWeb(ctx, cores, root); err != nil {
			return err
		}
		f.others = append(f.others, f.web)
		f.done = append(f.done, f.webDone)
		f.webURLs = append(f.webURLs, f.webURL)
	}
	f.web, f.webDone, f.webURL = primary, primaryDone, primaryURL
	return nil
}

func (f *forge) startOneWeb(ctx context.Context, cores int, root string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	f.webLog = filepath.Join(f.work, fmt.Sprintf("collab-web.%s.%d.log", filepath.Base(root), cores))
	logf, err := os.Create(f.webLog)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := []string{"-c", cpuList(cores), filepath.Join(f.bin, "collab-web"), "--root", root, "--listen", addr, "--url", "http://" + addr}
	if f.webDB != "" {
		args = append(args, "--db", f.webDB)
	}
	f.web = exec.Command("taskset", args...)
	f.web.Env = append(append([]string{}, f.env...), "GOMAXPROCS="+strconv.Itoa(cores))
	f.web.Stdout, f.web.Stderr = logf, logf
	if err := f.web.Start(); err != nil {
		return err
	}
	web, done := f.web, make(chan error, 1)
	f.webDone = done
	go func() { done <- web.Wait() }()
	f.webURL = "http://" + addr
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := f.http.Get(f.webURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-f.webDone:
			b, _ := os.ReadFile(f.webLog)
			return fmt.Errorf("collab-web exited: %v\n%s", err, b)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("collab-web did not answer /healthz within 2 minutes")
		}
	}
}

func (f *forge) stopWeb() {
	for i, w := range f.others {
		_ = w.Process.Signal(os.Interrupt)
		<-f.done[i]
	}
	f.others, f.done = nil, nil
	if f.web == nil {
		return
	}
	_ = f.web.Process.Signal(os.Interrupt)
	select {
	case <-f.webDone:
	case <-time.After(30 * time.Second):
		_ = f.web.Process.Kill()
		<-f.webDone
	}
	f.web = nil
}

func (f *forge) close() { f.stopWeb() }

// webCPU is collab-web's user+sys time so far (/proc/PID/stat, in clock
// ticks of 10 ms).
func (f *forge) webCPU() time.Duration {
	if f.web == nil {
		return 0
	}
	sum := runningCPU(f.web)
	for _, w := range f.others {
		sum += runningCPU(w)
	}
	return sum
}

// runningCPU is a running process's user+sys time so far.
func runningCPU(p *exec.Cmd) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// walSampler records the largest size the WAL reaches until stopped.
type walSampler struct {
	mu   sync.Mutex
	peak int64
	stop chan struct{}
	done chan struct{}
}

func (f *forge) sampleWAL() *walSampler {
	w := &walSampler{stop: make(chan struct{}), done: make(chan struct{})}
	path := filepath.Join(f.root, "collab.db-wal")
	go func() {
		defer close(w.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if fi, err := os.Stat(path); err == nil {
				w.mu.Lock()
				w.peak = max(w.peak, fi.Size())
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *walSampler) end() int64 {
	close(w.stop)
	<-w.done
	return w.peak
}
