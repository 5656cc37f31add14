package webhook_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/store"
)

// binaries builds the real collab-hook and collab-web once per test.
func binaries(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the real binaries")
	}
	dir := t.TempDir()
	for _, cmd := range []string{"collab-hook", "collab-web"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "github.com/collab-forge/collab/cmd/"+cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}
	return dir
}

type site struct {
	t      *testing.T
	bin    string
	root   string
	addr   string
	web    *exec.Cmd
	exited chan struct{} // closed when web has exited
	logs   bytes.Buffer
}

// startSite makes a forge with repository demo and principal ada holding
// level on it, and starts collab-web on it; a failing test shows its log.
func startSite(t *testing.T, level string) *site {
	t.Helper()
	s := &site{t: t, bin: binaries(t), root: filepath.Join(t.TempDir(), "root"), addr: freeAddr(t)}
	s.hook("init", "--url", "http://forge.test")
	s.hook("repo", "create", "demo")
	s.hook("user", "add", "ada")
	s.hook("grant", "ada", "demo", level)
	s.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("collab-web log:\n%s", s.logs.String())
		}
	})
	return s
}

// signingKey fetches the key collab-web publishes for webhook signatures.
func (s *site) signingKey() ed25519.PublicKey {
	s.t.Helper()
	resp, err := http.Get("http://" + s.addr + "/api/v1/signing-key")
	if err != nil {
		s.t.Fatal(err)
	}
	var published struct {
		Algorithm string `json:"algorithm"`
		PublicKey string `json:"public_key"`
	}
	err = json.NewDecoder(resp.Body).Decode(&published)
	resp.Body.Close()
	pub, _ := base64.StdEncoding.DecodeString(published.PublicKey)
	if err != nil || published.Algorithm != "ed25519" || len(pub) != ed25519.PublicKeySize {
		s.t.Fatalf("signing key %+v: %v", published, err)
	}
	return pub
}

func (s *site) hook(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "collab-hook"), append([]string{"--root", s.root}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("collab-hook %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// verb runs an SSH verb the way sshd's forced command would.
func (s *site) verb(as, command string) string {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(s.bin, "collab-hook"), "--root", s.root, "serve", "--as", as)
	cmd.Env = append(os.Environ(), "SSH_ORIGINAL_COMMAND="+command)
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("verb %q: %v\n%s", command, err, out)
	}
	return string(out)
}

func (s *site) start() {
	s.t.Helper()
	s.web = exec.Command(filepath.Join(s.bin, "collab-web"), "--root", s.root, "--listen", s.addr)
	s.web.Stdout, s.web.Stderr = &s.logs, &s.logs
	if err := s.web.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) {
		_ = cmd.Wait()
		close(exited)
	}(s.web, s.exited)
	waitFor(s.t, "collab-web to listen", func() bool {
		select {
		case <-s.exited:
			s.t.Fatalf("collab-web exited: %v", s.web.ProcessState)
		default:
		}
		resp, err := http.Get("http://" + s.addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
}

func (s *site) kill() {
	s.t.Helper()
	if err := s.web.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	<-s.exited
}

// ttl is a lease TTL that outlasts several verbs on this machine however
// loaded it is: five times the slowest of three timed verbs, in whole
// seconds, at least 1 s (as testscript's measure-login sizes one).
func (s *site) ttl(as string) time.Duration {
	s.t.Helper()
	var slowest time.Duration
	for range 3 {
		start := time.Now()
		s.verb(as, "whoami")
		slowest = max(slowest, time.Since(start))
	}
	return max(time.Duration(math.Ceil((5*slowest).Seconds()))*time.Second, time.Second)
}

// untilPast waits until the RFC 3339 time at (a lease's expires_at) has
// passed on this machine's clock, which is the forge's.
func untilPast(t *testing.T, at string) {
	t.Helper()
	when, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(when); d > patience {
		t.Fatalf("%s is %v away", at, d)
	}
	// The forge compares times at millisecond precision: a moment past it.
	time.Sleep(time.Until(when) + 5*time.Millisecond)
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// The real collab-web, killed with SIGKILL while a delivery is in flight
// and started again, delivers every event in order with nothing lost, and
// announces a lease that expired while it was down exactly once. The
// receiver verifies signatures with the key collab-web publishes.
func TestCollabWebKilledMidDelivery(t *testing.T) {
	s := startSite(t, "write")
	pub := s.signingKey()

	// The receiver holds its 6th request until collab-web is dead.
	rc := &receiver{t: t, pub: pub}
	inFlight, killed, heldDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		n := rc.n
		rc.mu.Unlock()
		if n == 5 {
			once.Do(func() { close(inFlight) })
			<-killed
			defer close(heldDone)
		}
		rc.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s.hook("webhook", "add", srv.URL)

	// Real verbs make the events: 20 issues filed, commented on, claimed.
	var ids []string
	for i := range 8 {
		out := s.verb("ada", fmt.Sprintf("issue new demo --title 'issue %d' --json", i))
		var is struct{ ID string }
		if err := json.Unmarshal([]byte(out), &is); err != nil {
			t.Fatalf("issue new: %s", out)
		}
		ids = append(ids, is.ID)
		s.verb("ada", "issue comment demo "+is.ID+" --body hello")
	}
	select {
	case <-inFlight:
	case <-time.After(patience):
		t.Fatal("no delivery in flight")
	}
	s.kill()
	close(killed)
	select {
	case <-heldDone: // the held request is in the receiver's log
	case <-time.After(patience):
		t.Fatal("the held request did not finish")
	}

	// While collab-web is down: more events, and a lease that expires.
	var lease struct {
		ExpiresAt string `json:"expires_at"`
	}
	if out := s.verb("ada", "lease acquire demo "+ids[0]+" --ttl 1s --json"); json.Unmarshal([]byte(out), &lease) != nil || lease.ExpiresAt == "" {
		t.Fatalf("lease acquire: %s", out)
	}
	s.verb("ada", "issue close demo "+ids[1])
	untilPast(t, lease.ExpiresAt)
	seenWhileDown := len(rc.seen())

	s.start()
	defer s.kill()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(s.root, "collab.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The sweep adds lease.expired; then every event must arrive.
	var want []int64
	waitFor(t, "every event, lease.expired among them", func() bool {
		want = want[:0]
		swept := false
		rows, err := db.R().QueryContext(ctx, "SELECT id, event FROM events ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var kind string
			_ = rows.Scan(&id, &kind)
			want = append(want, id)
			swept = swept || kind == events.LeaseExpired
		}
		got := rc.ids()
		return swept && len(got) == len(want) && got[len(got)-1] == want[len(want)-1]
	})
	if g := rc.ids(); !equalIDs(g, want) {
		t.Errorf("delivered (deduplicated, in arrival order) %v, want %v", g, want)
	}
	// The request held while collab-web died was never answered to it, so
	// it comes again: a duplicate the receiver drops by X-Collab-Delivery.
	if seenWhileDown != 6 {
		t.Fatalf("receiver had %d requests while collab-web was down, want 6", seenWhileDown)
	}
	held, again := rc.seen()[5].delivery, 0
	for _, g := range rc.seen()[6:] {
		if g.delivery == held {
			again++
		}
	}
	if again != 1 {
		t.Errorf("the delivery in flight at the kill (%s) came again %d times, want 1", held, again)
	}
	// Later sweeps must not announce that lease again. Another lease that
	// expires now is announced by a later sweep, and delivery is in
	// order: once it has arrived, a second announcement of the first
	// would have too.
	if out := s.verb("ada", "lease acquire demo "+ids[2]+" --ttl 1s --json"); json.Unmarshal([]byte(out), &lease) != nil || lease.ExpiresAt == "" {
		t.Fatalf("lease acquire: %s", out)
	}
	untilPast(t, lease.ExpiresAt)
	expiredOf := func(issue string) int {
		n := 0
		for _, g := range rc.seen() {
			var ten struct {
				IssueID string `json:"issue_id"`
			}
			if g.kind == events.LeaseExpired && json.Unmarshal(g.payload.Data, &ten) == nil && ten.IssueID == issue {
				n++
			}
		}
		return n
	}
	waitFor(t, "the second lease's expiry", func() bool { return expiredOf(ids[2]) > 0 })
	if n := expiredOf(ids[0]); n != 1 {
		t.Errorf("lease.expired for the lease that expired while collab-web was down delivered %d times, want 1", n)
	}
	kinds := map[string]bool{}
	for _, g := range rc.seen() {
		kinds[g.kind] = true
	}
	for _, k := range []string{events.IssueFiled, events.IssueCommented, events.IssueClaimed, events.IssueClosed, events.LeaseExpired} {
		if !kinds[k] {
			t.Errorf("no %s delivered (got %v)", k, kinds)
		}
	}
	out := s.hook("webhook", "deliveries", "1", "--limit", "0")
	if n := strings.Count(out, "status=200"); n < len(want) {
		t.Errorf("delivery log has %d successful attempts for %d events:\n%s", n, len(want), out)
	}
	if !strings.Contains(out, "delivery 1\tevent "+strconv.FormatInt(want[0], 10)) {
		t.Errorf("delivery log:\n%s", out)
	}
}

// git runs git in dir with a fixed identity and no user or system config.
func git(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada", "GIT_COMMITTER_EMAIL=ada@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Every one of the event kinds, made by the real verbs and real git
// pushes, reaches a receiver from the real collab-web, signed with the
// published key, in the order of the log (patch.created before its
// revision.pushed), each exactly once.
func TestEveryKindFromRealVerbs(t *testing.T) {
	s := startSite(t, "admin")
	defer s.kill()
	pub := s.signingKey()
	rc := &receiver{t: t, pub: pub}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s.hook("webhook", "add", srv.URL)

	// Issues and leases through the forced command.
	var is struct{ ID string }
	if err := json.Unmarshal([]byte(s.verb("ada", "issue new demo --title 'Crash on empty config' --json")), &is); err != nil {
		t.Fatal(err)
	}
	s.verb("ada", "issue comment demo "+is.ID+" --body 'I can reproduce this.'")
	s.verb("ada", "issue label demo "+is.ID+" --add bug --add prio:high")
	ttl := s.ttl("ada").String() // the renew must find the lease live
	s.verb("ada", "lease acquire demo "+is.ID+" --ttl "+ttl)
	s.verb("ada", "lease renew demo "+is.ID+" --ttl "+ttl)
	waitFor(t, "the sweeper's lease.expired", func() bool {
		for _, g := range rc.seen() {
			if g.kind == events.LeaseExpired {
				return true
			}
		}
		return false
	})
	s.verb("ada", "lease acquire demo "+is.ID)
	s.verb("ada", "lease release demo "+is.ID)
	s.verb("ada", "issue close demo "+is.ID)
	s.verb("ada", "issue reopen demo "+is.ID)
	s.verb("ada", "issue edit demo "+is.ID+" --title 'Crash on an empty config'")

	// A patch: pushed for review, reviewed, merged by a push to main.
	home, work := t.TempDir(), t.TempDir()
	repo := filepath.Join(s.root, "repos", "demo.git")
	git(t, home, work, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644)
	git(t, home, work, "add", "a.txt")
	git(t, home, work, "commit", "-q", "-m", "first")
	git(t, home, work, "push", "-q", repo, "HEAD:main")
	os.WriteFile(filepath.Join(work, "b.txt"), []byte("b\n"), 0o644)
	git(t, home, work, "add", "b.txt")
	git(t, home, work, "commit", "-q", "-m", "Handle an empty config", "-m", "Patch: 8b2f6c1e0d9a4b7c3e5f1a2b4c6d8e0f1a3b5c7d")
	git(t, home, work, "push", repo, "HEAD:refs/for/main")
	s.verb("ada", "patch edit demo 8b2f6c1e --description 'An empty file is a valid config.'")
	s.verb("ada", "patch review demo 8b2f6c1e --approve --body lgtm")
	posted := s.verb("ada", "patch review demo 8b2f6c1e --comment --file b.txt --line 1 --body why")
	comment := strings.Fields(posted)[1] // "review ID: …"
	s.verb("ada", "patch resolve demo 8b2f6c1e "+strings.TrimSuffix(comment, ":"))
	s.verb("ada", "patch check demo 8b2f6c1e ci/test --state success")
	s.verb("ada", "branch protect demo main --approvals 0")
	s.verb("ada", "branch unprotect demo main")
	git(t, home, work, "push", "-q", repo, "HEAD:main")

	db, err := store.Open(context.Background(), filepath.Join(s.root, "collab.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var want []int64
	var kinds []string
	readLog := func() {
		want, kinds = want[:0], kinds[:0]
		rows, err := db.R().Query("SELECT id, event FROM events ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var k string
			_ = rows.Scan(&id, &k)
			want, kinds = append(want, id), append(kinds, k)
		}
	}
	waitFor(t, "every event of the log", func() bool {
		readLog()
		return len(rc.ids()) >= len(want) && len(want) > 0
	})
	// Nothing else may come: a last event, delivered in order, arrives
	// after anything still on its way.
	s.verb("ada", "issue comment demo "+is.ID+" --body 'Thanks, fixed.'")
	readLog()
	last := want[len(want)-1]
	waitFor(t, "the last comment", func() bool { return slices.Contains(rc.ids(), last) })
	if got := rc.ids(); !equalIDs(got, want) {
		t.Errorf("delivered %v, want the log %v (%v)", got, want, kinds)
	}
	if n := len(rc.seen()); n != len(want) {
		t.Errorf("%d requests for %d events: duplicates without a restart", n, len(want))
	}
	seen := map[string]int{}
	for i, g := range rc.seen() {
		seen[g.kind]++
		if g.kind == events.RevisionPushed && (i == 0 || rc.seen()[i-1].kind != events.PatchCreated) && seen[events.RevisionPushed] == 1 {
			t.Errorf("first revision.pushed not right after patch.created: %v", kinds)
		}
	}
	for _, k := range events.Kinds {
		if seen[k] == 0 {
			t.Errorf("no %s delivered; got %v", k, kinds)
		}
	}
	if seen[events.LeaseExpired] != 1 {
		t.Errorf("lease.expired %d times", seen[events.LeaseExpired])
	}
}
