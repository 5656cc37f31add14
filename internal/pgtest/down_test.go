//go:build postgres

package pgtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForgeWhilePostgresStops: the record's server stops (pg_ctl's fast
// stop, which ends every session, transactions in flight included) while
// agents comment through the forced command, one pushes revisions of a
// patch, and another comments through collab-web's API; then it comes
// back. While it is down each write is refused as "try again later": exit
// 6 with one line, a refused push, 503 with Retry-After; none exits 1.
// Once it is back the same writes succeed without restarting anything,
// and nothing is lost or doubled: every comment whose writer was told it
// was written is on the issue, every pushed revision is pinned, revision
// numbers run 1..n with no gap or repeat, fsck finds nothing to mend, and
// collab-web, whose delivery lost its lead with its session, leads again
// and delivers every comment's event to a webhook.
//
// It runs twice: with the root's db setting naming the server, and naming
// the host's pgbouncer (transaction pooling), as docs/operations.md has
// it, whose pooled server connections the stop ends under it.
func TestForgeWhilePostgresStops(t *testing.T) {
	f := newPGForge(t)
	t.Run("direct", func(t *testing.T) { outage(t, f, f.url) })
	via := f.pooled("pooled")
	t.Run("pgbouncer", func(t *testing.T) { outage(t, f, via) })
}

func outage(t *testing.T, parent *pgForge, db string) {
	ctx := context.Background()
	f := *parent
	f.t = t
	root := filepath.Join(t.TempDir(), "root")
	f.must(root, nil, "init", "--db", db)
	var hooked sync.Map // the comment bodies whose issue.commented reached the webhook
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Event string
			Data  struct{ Body string }
		}
		if json.NewDecoder(r.Body).Decode(&ev) == nil && ev.Event == "issue.commented" {
			hooked.Store(ev.Data.Body, true)
		}
	}))
	defer recv.Close()
	for _, args := range [][]string{
		{"repo", "create", "demo"}, {"user", "add", "alice"}, {"grant", "alice", "demo", "write"},
		{"webhook", "add", recv.URL},
	} {
		f.must(root, nil, args...)
	}
	out, code := f.as(root, "alice", "issue new demo --title 'through an outage'")
	issue := regexp.MustCompile(`[0-9a-f]{40}`).FindString(out)
	if code != 0 || issue == "" {
		t.Fatalf("issue new: exit %d\n%s", code, out)
	}
	out, code = f.as(root, "alice", "token new --json")
	var tok struct{ Token string }
	if code != 0 || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" {
		t.Fatalf("token new: exit %d\n%s", code, out)
	}
	const patch = "0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d"
	f.pushAs(root, "alice", "HEAD:main", "init")
	f.pushAs(root, "alice", "HEAD:refs/for/main", "Stream 0\n\nPatch: "+patch)

	web := &host{root: root}
	web.start(t, f.dir)
	waitPage(t, "http://"+web.addr+"/healthz")
	apiComment := func(body string) *http.Response {
		req, _ := http.NewRequest("POST", "http://"+web.addr+"/api/v1/repos/demo/issues/"+issue+"/comments",
			strings.NewReader(fmt.Sprintf(`{"body":%q}`, body)))
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}

	// The load: two agents commenting, one pushing revisions, each in a
	// loop until stop; up counts their successes, down their refusals.
	var (
		stop     atomic.Bool
		up, down atomic.Int64
		pushedUp atomic.Int64
		mu       sync.Mutex
		written  []string // bodies whose writer was told exit 0
		pushed   []string // commits a push was told were taken
		wrong    []string
		wg       sync.WaitGroup
	)
	refused := func(what, out string) {
		down.Add(1)
		if !strings.Contains(out, "try again later") {
			mu.Lock()
			wrong = append(wrong, what+": refused without saying to try again later: "+out)
			mu.Unlock()
		}
	}
	for a := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; !stop.Load(); n++ {
				body := fmt.Sprintf("note %d.%d", a, n)
				out, code := f.as(root, "alice", "issue comment demo "+issue+" --body '"+body+"'")
				switch {
				case code == 0:
					up.Add(1)
					mu.Lock()
					written = append(written, body)
					mu.Unlock()
				case code == 6 && strings.Count(strings.TrimSpace(out), "\n") == 0:
					refused("comment", out)
				default:
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("comment: exit %d: %s", code, out))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 1; !stop.Load(); n++ {
			oid, out, err := f.push(root, "alice", "HEAD:refs/for/main", fmt.Sprintf("Stream %d\n\nPatch: %s", n, patch), true)
			if err != nil {
				refused("push", out)
				continue
			}
			pushedUp.Add(1)
			mu.Lock()
			pushed = append(pushed, oid)
			mu.Unlock()
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()

	waitFor(t, "writes before the stop", func() bool { return up.Load() >= 4 && pushedUp.Load() >= 1 })
	if err := f.c.Down(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "refusals while the server is down", func() bool { return down.Load() >= 4 })
	if res := apiComment("while down"); res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("API comment while the server is down: %s, Retry-After %q; want 503 with Retry-After", res.Status, res.Header.Get("Retry-After"))
	}
	if err := f.c.Up(ctx); err != nil {
		t.Fatal(err)
	}
	u, p, back := up.Load(), pushedUp.Load(), time.Now()
	waitFor(t, "a write once the server is back", func() bool { return up.Load() > u })
	t.Logf("first write %v after the server was back", time.Since(back).Round(time.Millisecond))
	waitFor(t, "writes once the server is back", func() bool { return up.Load() >= u+4 && pushedUp.Load() >= p+1 })
	waitFor(t, "an API comment once the server is back", func() bool { return apiComment("after").StatusCode == http.StatusCreated })
	stop.Store(true)
	wg.Wait()

	for _, w := range wrong {
		t.Error(w)
	}
	out, code = f.as(root, "alice", "issue show demo "+issue)
	if code != 0 {
		t.Fatalf("issue show: exit %d\n%s", code, out)
	}
	for _, body := range append(written, "after") {
		if !strings.Contains(out, body+"\n") {
			t.Errorf("comment %q was written (exit 0) but is not on the issue", body)
		}
	}
	out, code = f.as(root, "alice", "patch show demo "+patch+" --json")
	var shown struct {
		Revisions []struct {
			Number int
			Commit string
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil {
		t.Fatalf("patch show: exit %d\n%s", code, out)
	}
	var commits []string
	for i, r := range shown.Revisions {
		if r.Number != i+1 {
			t.Errorf("revision numbers %v: not 1..n", shown.Revisions)
			break
		}
		commits = append(commits, r.Commit)
	}
	for _, oid := range pushed {
		if !slices.Contains(commits, oid) {
			t.Errorf("pushed commit %s (push said done) is no revision of the patch", oid)
		}
	}
	if out := f.must(root, nil, "fsck", "--dry-run"); !strings.Contains(out, "0 problems") {
		t.Errorf("fsck after the outage:\n%s", out)
	}
	// collab-web's delivery lost its lead with the server's sessions; it
	// leads again and delivers every comment, those of the outage's eve
	// included (at least once).
	waitFor(t, "every comment's webhook", func() bool {
		for _, body := range append(written, "after") {
			if _, ok := hooked.Load(body); !ok {
				return false
			}
		}
		return true
	})
	if t.Failed() {
		if b, err := os.ReadFile(filepath.Join(root, "log", "collab-hook.log")); err == nil {
			t.Logf("collab-hook.log:\n%s", b)
		}
	}
	t.Logf("%d writes done, %d refused while down; %d revisions", up.Load()+pushedUp.Load(), down.Load(), len(shown.Revisions))
}
