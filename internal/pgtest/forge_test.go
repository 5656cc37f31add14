//go:build postgres

package pgtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/buildtest"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/pgtest"
)

// pgForge is what these tests share: a throwaway cluster holding the empty
// database forge, and make build's programs in dir: collab-hook without
// the driver, which hands a run to collab-hook-pg beside it, and
// collab-web with it.
type pgForge struct {
	t        *testing.T
	c        *pgtest.Cluster
	url, dir string
}

func newPGForge(t *testing.T) *pgForge {
	t.Helper()
	c := pgtest.ForTest(t)
	url, err := c.CreateDB(context.Background(), "forge")
	if err != nil {
		t.Fatal(err)
	}
	f := &pgForge{t: t, c: c, url: url, dir: t.TempDir()}
	buildtest.Build(t, "../../cmd/collab-hook", f.bin(), "urfave_cli_no_docs")
	buildtest.Build(t, "../../cmd/collab-hook", filepath.Join(f.dir, layout.PostgresBinary), "urfave_cli_no_docs,postgres")
	buildtest.Build(t, "../../cmd/collab-web", filepath.Join(f.dir, "collab-web"), "urfave_cli_no_docs,postgres")
	return f
}

func (f *pgForge) bin() string { return filepath.Join(f.dir, "collab-hook") }

// pooled is the URL of database name of f's cluster through a pgbouncer
// of its own in transaction pooling, as a host runs one; name is made
// empty unless it is the forge's. The pgbouncer stops when f's test ends.
func (f *pgForge) pooled(name string) string {
	f.t.Helper()
	ctx := context.Background()
	if name != "forge" {
		if _, err := f.c.CreateDB(ctx, name); err != nil {
			f.t.Fatal(err)
		}
	}
	b, via, err := pgtest.StartBouncer(ctx, f.c.Sock(), name, 4)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(b.Stop)
	return via
}

// run runs collab-hook on root with env added, and returns its output and
// exit code.
func (f *pgForge) run(root string, env []string, args ...string) (string, int) {
	f.t.Helper()
	cmd := exec.Command(f.bin(), append([]string{"--root", root}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return string(out), 0
}

// must is run that fails the test unless collab-hook exits 0.
func (f *pgForge) must(root string, env []string, args ...string) string {
	f.t.Helper()
	out, code := f.run(root, env, args...)
	if code != 0 {
		f.t.Fatalf("%s %v: exit %d\n%s", strings.Join(args, " "), env, code, out)
	}
	return out
}

// as runs verb as sshd runs the forced command of who's key.
func (f *pgForge) as(root, who, verb string) (string, int) {
	f.t.Helper()
	return f.run(root, []string{"SSH_ORIGINAL_COMMAND=" + verb}, "serve", "--as", who)
}

// TestForgeOnPostgres: a forge whose record is on PostgreSQL, driven as
// sshd drives it (collab-hook serve --as NAME with SSH_ORIGINAL_COMMAND),
// collab-hook handing each run to collab-hook-pg:
// init --db refuses a bad URL (exit 2) and an unreachable server (exit 6)
// leaving nothing behind; then an issue filed by one principal is read by
// another, and 64 agents racing for its lease leave one holder, the rest
// told exit 3 (none exit 1), with writers one at a time (the default) and
// with concurrent SERIALIZABLE writers, where the racers' serialization
// failures are run again inside the store.
func TestForgeOnPostgres(t *testing.T) {
	f := newPGForge(t)
	t.Run("serial", func(t *testing.T) { leaseRace(t, f, f.url) })
	url, err := f.c.CreateDB(context.Background(), "serializable")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("serializable", func(t *testing.T) { leaseRace(t, f, url+"&collab_writers=serializable") })
}

func leaseRace(t *testing.T, parent *pgForge, url string) {
	f := *parent
	f.t = t
	root := filepath.Join(t.TempDir(), "root")
	run := func(env []string, args ...string) (string, int) { return f.run(root, env, args...) }
	as := func(who, verb string) (string, int) { return f.as(root, who, verb) }

	for _, tc := range []struct {
		url  string
		code int
	}{
		{"mysql://u@h/forge", 2},
		{"postgres://u@h/forge?connect_timeout=soon", 2},
		{pgtest.BaseURL(t.TempDir(), "forge"), 6},
	} {
		out, code := run(nil, "init", "--db", tc.url)
		if code != tc.code || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("init --db %s: exit %d, %q; want exit %d and one line", tc.url, code, out, tc.code)
		}
		if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("init --db %s left %s behind", tc.url, root)
		}
	}

	for _, args := range [][]string{
		{"init", "--db", url}, {"user", "add", "alice"}, {"user", "add", "bob"},
		{"repo", "create", "demo"}, {"grant", "alice", "demo", "write"}, {"grant", "bob", "demo", "write"},
	} {
		if out, code := run(nil, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "collab.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a forge on PostgreSQL made collab.db")
	}
	out, code := as("alice", "issue new demo --title 'on postgres'")
	if code != 0 {
		t.Fatalf("issue new: exit %d\n%s", code, out)
	}
	id := strings.TrimSuffix(strings.Fields(out)[1], "\n")
	if out, code := as("bob", "issue comment demo "+id+" --body 'seen from bob'"); code != 0 {
		t.Fatalf("issue comment: exit %d\n%s", code, out)
	}
	if out, _ := as("alice", "issue show demo "+id); !strings.Contains(out, "seen from bob") {
		t.Errorf("alice does not see bob's comment:\n%s", out)
	}

	var wg sync.WaitGroup
	codes := make(chan string, 64)
	for n := range 64 {
		who := []string{"alice", "bob"}[n%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, code := as(who, "lease acquire demo "+id+" --ttl 10m")
			codes <- who + " " + string(rune('0'+code)) + " " + out
		}()
	}
	wg.Wait()
	close(codes)
	won := map[string]bool{}
	for c := range codes {
		f := strings.Fields(c)
		switch f[1] {
		case "0":
			won[f[0]] = true
		case "3":
		default:
			t.Errorf("lease acquire: %s", c)
		}
	}
	if len(won) != 1 {
		t.Errorf("holders after the race: %v, want one", won)
	}
	out, _ = as("alice", "lease list demo")
	if !strings.Contains(out, "token 1,") {
		t.Errorf("lease list: %s; want one tenure, token 1", out)
	}
}

// host is one forge host of TestTwoHosts: its root, and its collab-web.
type host struct {
	root, addr string
	web        *exec.Cmd
	logs       bytes.Buffer
}

// start runs the collab-web of dir (make build's) for h on a free address,
// with args added, until t ends; its log is shown if t failed.
func (h *host) start(t *testing.T, dir string, args ...string) {
	t.Helper()
	h.addr = freeAddr(t)
	h.web = exec.Command(filepath.Join(dir, "collab-web"), append([]string{"--root", h.root, "--listen", h.addr}, args...)...)
	h.web.Stdout, h.web.Stderr = &h.logs, &h.logs
	if err := h.web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.web.Process.Signal(os.Interrupt)
		h.web.Wait()
		if t.Failed() {
			t.Logf("collab-web on %s:\n%s", filepath.Base(h.root), h.logs.String())
		}
	})
}

// TestTwoHosts: two forge hosts, each its own root and collab-web, share
// one PostgreSQL record and (as a shared mount would) one repositories
// directory and forge key. Agents on both race for the issues' leases:
// each issue goes to one agent. A comment written through A shows on B's
// page at once. Each event is delivered to a webhook once, though both
// hosts' collab-web run. A key added on A reaches B's outage key index.
// B's collab-web reaches the record through a URL of its own (--db).
func TestTwoHosts(t *testing.T) {
	f := newPGForge(t)
	url, dir := f.url, f.dir
	must := func(root string, args ...string) string { return f.must(root, nil, args...) }
	as := f.as

	var mu sync.Mutex
	got := map[string]int{} // X-Collab-Delivery: times delivered
	events := map[string]bool{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			ID    int64  `json:"id"`
			Event string `json:"event"`
		}
		_ = json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		got[r.Header.Get("X-Collab-Delivery")]++
		events[fmt.Sprintf("%d %s", ev.ID, ev.Event)] = true
		mu.Unlock()
	}))
	defer recv.Close()

	a, b := &host{root: filepath.Join(dir, "a")}, &host{root: filepath.Join(dir, "b")}
	must(a.root, "init", "--db", url, "--url", "http://a.test")
	for _, args := range [][]string{
		{"user", "add", "alice"}, {"user", "add", "bob"}, {"repo", "create", "demo", "--public"},
		{"grant", "alice", "demo", "write"}, {"grant", "bob", "demo", "write"}, {"webhook", "add", recv.URL},
	} {
		must(a.root, args...)
	}
	// B mounts A's repositories and holds the forge's key, as a second
	// host would.
	if err := os.MkdirAll(b.root, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(a.root, "repos"), filepath.Join(b.root, "repos")); err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(filepath.Join(a.root, "forge.key"))
	if err != nil || os.WriteFile(filepath.Join(b.root, "forge.key"), key, 0o600) != nil {
		t.Fatal("copy forge.key", err)
	}
	must(b.root, "init", "--db", url, "--url", "http://a.test")

	a.start(t, dir, "--outage-keys-every", "100ms")
	// B's collab-web reaches the record its own way, its statements
	// prepared (collab-web --db).
	b.start(t, dir, "--outage-keys-every", "100ms", "--db", url+"&default_query_exec_mode=cache_statement")

	// A key added through A reaches B's outage key index, which B's
	// collab-web rewrites from the record.
	pub := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINgIsotr9nsBT/qLhZoYxf2ExLlPmLnYf4LMzxcRqSUf"
	must(a.root, "key", "add", "alice", pub)
	waitFor(t, "A's key in B's outage key index", func() bool {
		idx, _ := os.ReadFile(filepath.Join(b.root, "collab.db.keys-outage"))
		return strings.Contains(string(idx), pub+" alice\n")
	})

	var ids []string
	for n := range 6 {
		root := []string{a.root, b.root}[n%2]
		out, code := as(root, "alice", fmt.Sprintf("issue new demo --title 'issue %d'", n))
		if code != 0 {
			t.Fatalf("issue new on %s: exit %d\n%s", filepath.Base(root), code, out)
		}
		ids = append(ids, strings.Fields(out)[1])
	}
	if out, code := as(a.root, "bob", "issue comment demo "+ids[1]+" --body 'written on host a'"); code != 0 {
		t.Fatalf("comment: exit %d\n%s", code, out)
	}
	page := waitPage(t, "http://"+b.addr+"/demo/-/issues/"+ids[1])
	if !strings.Contains(page, "written on host a") {
		t.Errorf("B's page of the issue lacks A's comment:\n%.500s", page)
	}

	var wg sync.WaitGroup
	results := make(chan string, 16)
	for n := range 16 {
		root, who := []string{a.root, b.root}[n%2], []string{"alice", "bob"}[n/2%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, code := as(root, who, "lease acquire demo --next --ttl 10m")
			results <- fmt.Sprintf("%d %s", code, out)
		}()
	}
	wg.Wait()
	close(results)
	claimed := map[string]int{}
	for r := range results {
		switch f := strings.Fields(r); f[0] {
		case "0":
			claimed[strings.TrimSuffix(f[2], ":")]++
		case "4": // none left
		default:
			t.Errorf("lease acquire --next: %s", r)
		}
	}
	for _, id := range ids {
		if claimed[id] != 1 {
			t.Errorf("issue %s claimed %d times, want once (%v)", id, claimed[id], claimed)
		}
	}

	// Every event so far (6 filed, 1 comment, 6 leases), each once: wait
	// for them, then for one more, which the one dispatcher delivers after
	// them; a second dispatcher would have sent the first ones again.
	want := len(ids) + 1 + len(ids)
	waitFor(t, "the events' deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(events) >= want })
	out, code := as(b.root, "alice", "issue new demo --title 'the last'")
	if code != 0 {
		t.Fatalf("issue new: exit %d\n%s", code, out)
	}
	waitFor(t, "the last event", func() bool { mu.Lock(); defer mu.Unlock(); return len(events) >= want+1 })
	mu.Lock()
	defer mu.Unlock()
	for d, n := range got {
		if n != 1 {
			t.Errorf("delivery %s sent %d times, want once", d, n)
		}
	}
	if len(got) != want+1 {
		t.Errorf("%d deliveries for %d events", len(got), want+1)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitFor polls cond until it holds, for at most two minutes (a loaded
// machine), failing the test past that.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within two minutes", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPage gets url once collab-web answers it.
func waitPage(t *testing.T, url string) string {
	t.Helper()
	var body string
	waitFor(t, "page "+url, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	})
	return body
}

// TestMigrateToPostgres: a forge on SQLite moves its record into an empty
// PostgreSQL database; what its users read is the same afterwards, new
// writes go on from the moved ids, and a second move (or a move into a
// database that holds a record) is refused with exit 2.
func TestMigrateToPostgres(t *testing.T) {
	f := newPGForge(t)
	url, dir := f.url, f.dir
	run, must := f.run, f.must
	as := func(root, who, verb string) string {
		t.Helper()
		return must(root, []string{"SSH_ORIGINAL_COMMAND=" + verb}, "serve", "--as", who)
	}
	root := filepath.Join(dir, "root")
	for _, args := range [][]string{
		{"init"}, {"user", "add", "alice"}, {"user", "add", "bob"}, {"repo", "create", "demo"},
		{"grant", "alice", "demo", "write"}, {"grant", "bob", "demo", "write"}, {"webhook", "add", "http://127.0.0.1:9/hook"},
	} {
		must(root, nil, args...)
	}
	var ids []string
	for n := range 3 {
		out := as(root, "alice", fmt.Sprintf("issue new demo --title 'issue %d'", n))
		ids = append(ids, strings.Fields(out)[1])
		as(root, "bob", "issue comment demo "+ids[n]+" --body 'comment on "+strconv.Itoa(n)+"'")
	}
	as(root, "bob", "issue label demo "+ids[0]+" --add ready")
	as(root, "alice", "lease acquire demo "+ids[1]+" --ttl 10m")
	reads := []string{"issue list demo", "issue show demo " + ids[0], "issue show demo " + ids[2], "lease list demo", "issue list demo --label ready"}
	before := map[string]string{}
	for _, v := range reads {
		before[v] = as(root, "alice", v)
	}

	out := must(root, nil, "migrate-to-postgres", url)
	if !strings.Contains(out, "the same count in each") {
		t.Errorf("migrate-to-postgres said:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(root, "collab.db.before-postgres")); err != nil {
		t.Errorf("the SQLite record is not kept: %v", err)
	}
	for _, v := range reads {
		if got := as(root, "alice", v); got != before[v] {
			t.Errorf("%s after the move:\n%s\nbefore:\n%s", v, got, before[v])
		}
	}
	// The ids go on from the moved ones.
	out = as(root, "bob", "issue new demo --title 'after the move'")
	as(root, "alice", "issue comment demo "+strings.Fields(out)[1]+" --body 'still here'")
	if got := as(root, "alice", "issue list demo"); !strings.Contains(got, "after the move") || !strings.Contains(got, "issue 0") {
		t.Errorf("issue list after a new issue:\n%s", got)
	}

	if out, code := run(root, nil, "migrate-to-postgres", url); code != 2 {
		t.Errorf("a second move: exit %d, %q; want 2", code, out)
	}
	other := filepath.Join(dir, "other")
	must(other, nil, "init")
	if out, code := run(other, nil, "migrate-to-postgres", url); code != 2 || !strings.Contains(out, "not empty") {
		t.Errorf("a move into a database that holds a record: exit %d, %q; want 2, not empty", code, out)
	}
	if _, err := os.Stat(filepath.Join(other, "collab.db")); err != nil {
		t.Errorf("a refused move lost the SQLite record: %v", err)
	}
}
