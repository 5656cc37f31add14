package web

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/ratelimit"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
	"github.com/collab-forge/collab/internal/tokens"
	"github.com/collab-forge/collab/internal/verbs"
)

// fixture is a forge with a public org/demo (alice and bob write, carol
// admin), a private secret (alice read), and a patch with two revisions.
type fixture struct {
	t     *testing.T
	srv   *httptest.Server
	db    *store.DB
	root  forge.Root
	tok   map[string]string
	patch string
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	root, err := forge.New(filepath.Join(dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	if err := forge.Init(ctx, root, map[string]string{"url": "http://forge.test"}); err != nil {
		t.Fatal(err)
	}
	db, err := root.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now()
	if _, err := repos.Create(ctx, root, db, "org/demo", true, "", "/bin/false", now); err != nil {
		t.Fatal(err)
	}
	if _, err := repos.Create(ctx, root, db, "secret", false, "", "/bin/false", now); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: db, root: root, tok: map[string]string{}}
	for _, u := range []string{"alice", "bob", "carol", "dave"} {
		if err := principals.Add(ctx, db, u, now); err != nil {
			t.Fatal(err)
		}
		var tk tokens.Token
		err := db.Write(ctx, func(tx *sql.Tx) error {
			var err error
			tk, err = tokens.New(ctx, tx, u, "t", now, 0)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		f.tok[u] = tk.Token
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		for _, g := range [][3]string{{"alice", "org/demo.git", "write"}, {"bob", "org/demo.git", "write"}, {"carol", "org/demo.git", "admin"}, {"alice", "secret.git", "read"}} {
			if _, err := tx.ExecContext(ctx, "INSERT INTO grants(principal, repo, level) VALUES (?, ?, ?)", g[0], g[1], g[2]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Two revisions of a patch, with objects fetched straight into the bare
	// repository (a fetch runs no receive hooks).
	work := filepath.Join(dir, "work")
	os.MkdirAll(work, 0o755)
	git(t, work, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	git(t, work, "add", ".")
	git(t, work, "commit", "-qm", "base")
	base := git(t, work, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("one\n2\nthree\n"), 0o644)
	git(t, work, "commit", "-qam", "change")
	rev1 := git(t, work, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("one\n2\nthree\nfour\n"), 0o644)
	git(t, work, "commit", "-qa", "--amend", "-m", "change")
	rev2 := git(t, work, "rev-parse", "HEAD")
	git(t, work, "branch", "r1", rev1)
	bare := filepath.Join(root.ReposDir(), "org", "demo.git")
	git(t, bare, "fetch", "-q", work, "main:refs/heads/main", "r1:refs/heads/r1")
	f.patch = "abcdef0123456789abcdef0123456789abcdef01"
	err = db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := patches.Create(ctx, tx, patches.New{Repo: "org/demo.git", ID: f.patch, Title: "Change two", Author: "alice", Base: "main"}, now); err != nil {
			return err
		}
		if _, _, err := patches.AddRevision(ctx, tx, "org/demo.git", f.patch, rev1, base, "alice", now); err != nil {
			return err
		}
		_, _, err := patches.AddRevision(ctx, tx, "org/demo.git", f.patch, rev2, base, "alice", now.Add(time.Second))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Root: root, DB: db, URL: "http://forge.test"})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(s)
	t.Cleanup(f.srv.Close)
	return f
}

type req struct {
	method, path, who, body, ctype string
	headers                        map[string]string
}

type resp struct {
	status int
	body   string
	header http.Header
}

func (f *fixture) do(r req) resp {
	f.t.Helper()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(r.method, f.srv.URL+r.path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if r.body != "" {
		ct := r.ctype
		if ct == "" {
			ct = "application/json"
		}
		hr.Header.Set("Content-Type", ct)
	}
	if r.who != "" {
		tok := f.tok[r.who]
		if tok == "" {
			tok = r.who
		}
		hr.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range r.headers {
		hr.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(hr)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, string(b), res.Header}
}

func (f *fixture) json(r req, v any) {
	f.t.Helper()
	got := f.do(r)
	if got.status >= 300 {
		f.t.Fatalf("%s %s: status %d: %s", r.method, r.path, got.status, got.body)
	}
	if err := json.Unmarshal([]byte(got.body), v); err != nil {
		f.t.Fatalf("%s %s: %v: %s", r.method, r.path, err, got.body)
	}
}

func (f *fixture) newIssue(who, title string) string {
	var is struct{ ID string }
	f.json(req{method: "POST", path: "/api/v1/repos/org%2Fdemo/issues", who: who, body: `{"title":"` + title + `"}`}, &is)
	return is.ID
}

func TestAPI(t *testing.T) {
	f := newFixture(t)
	issue := f.newIssue("alice", "First")
	other := f.newIssue("bob", "Second")
	closedByOther := f.newIssue("bob", "Third")
	api := "/api/v1/repos/org%2Fdemo"
	big := `{"title":"` + strings.Repeat("x", MaxBody) + `"}`
	tests := []struct {
		name string
		req
		status int
		want   string // a regexp the body must match
	}{
		{"healthz", req{method: "GET", path: "/healthz"}, 200, "ok"},
		{"signing key", req{method: "GET", path: "/api/v1/signing-key"}, 200, `"algorithm":"ed25519","public_key":"[A-Za-z0-9+/]{43}="`},
		{"repos anonymous", req{method: "GET", path: "/api/v1/repos"}, 200, `^\[\{"name":"org/demo.git"[^\]]*\]\n$`},
		{"repos alice sees secret", req{method: "GET", path: "/api/v1/repos", who: "alice"}, 200, `"secret.git"`},
		{"repo", req{method: "GET", path: api}, 200, `"name":"org/demo.git"`},
		{"private repo anonymous", req{method: "GET", path: "/api/v1/repos/secret/issues"}, 404, `"error":"repository secret not found"`},
		{"private repo no grant", req{method: "GET", path: "/api/v1/repos/secret.git/issues", who: "bob"}, 404, `not found`},
		{"private repo grant", req{method: "GET", path: "/api/v1/repos/secret/issues", who: "alice"}, 200, `^\[\]`},
		{"missing repo", req{method: "GET", path: "/api/v1/repos/nope/issues"}, 404, `not found`},
		{"bad repo name", req{method: "GET", path: "/api/v1/repos/..%2Fx/issues"}, 404, `not found`},
		{"bad token", req{method: "GET", path: "/api/v1/repos", who: "collab_bogus"}, 401, `bad token`},
		{"not bearer", req{method: "GET", path: "/api/v1/repos", headers: map[string]string{"Authorization": "Basic eDp5"}}, 401, `Bearer`},
		{"unknown api path", req{method: "GET", path: "/api/v1/nope"}, 404, `"error":"API endpoint not found"`},
		{"nested slashes left in", req{method: "GET", path: "/api/v1/repos/org/demo/issues"}, 200, issue},
		{"nested slashes left in, repo", req{method: "GET", path: "/api/v1/repos/org/demo.git"}, 200, `"name":"org/demo.git"`},
		{"nested slashes left in, comments", req{method: "GET", path: "/api/v1/repos/org/demo/issues/" + issue + "/comments"}, 200, `^\[`},
		{"wrong method", req{method: "DELETE", path: api + "/issues"}, 405, `"error"`},

		{"list issues", req{method: "GET", path: api + "/issues"}, 200, issue},
		{"list issues nested unescaped .git", req{method: "GET", path: "/api/v1/repos/org%2Fdemo.git/issues"}, 200, issue},
		{"list closed", req{method: "GET", path: api + "/issues?state=closed"}, 200, `^\[\]`},
		{"list bad state", req{method: "GET", path: api + "/issues?state=x"}, 400, `bad state`},
		{"list bad limit", req{method: "GET", path: api + "/issues?limit=-1"}, 400, `bad limit`},
		{"list limit", req{method: "GET", path: api + "/issues?limit=1"}, 200, closedByOther},
		{"list after", req{method: "GET", path: api + "/issues?after=" + other}, 200, issue},
		{"list after unknown", req{method: "GET", path: api + "/issues?after=ffff"}, 404, `no issue`},
		{"search", req{method: "GET", path: api + "/issues?q=secon"}, 200, other},
		{"file anonymous", req{method: "POST", path: api + "/issues", body: `{"title":"x"}`}, 401, `authentication required`},
		{"file not json", req{method: "POST", path: api + "/issues", who: "alice", body: `title=x`, ctype: "application/x-www-form-urlencoded"}, 415, `application/json`},
		{"file bad json", req{method: "POST", path: api + "/issues", who: "alice", body: `{"title":`}, 400, `bad JSON`},
		{"file unknown field", req{method: "POST", path: api + "/issues", who: "alice", body: `{"titel":"x"}`}, 400, `unknown field`},
		{"file empty title", req{method: "POST", path: api + "/issues", who: "alice", body: `{"title":" "}`}, 400, `empty title`},
		{"file too large", req{method: "POST", path: api + "/issues", who: "alice", body: big}, 413, `too large`},
		{"file private without read", req{method: "POST", path: "/api/v1/repos/secret/issues", who: "bob", body: `{"title":"x"}`}, 404, `not found`},
		{"file by reader", req{method: "POST", path: "/api/v1/repos/secret/issues", who: "alice", body: `{"title":"x"}`}, 201, `"state":"open"`},
		{"file", req{method: "POST", path: api + "/issues", who: "dave", body: `{"title":"From dave","body":"hi"}`}, 201, `"author":"dave"`},

		{"get issue", req{method: "GET", path: api + "/issues/" + issue}, 200, `"comments":\[\]`},
		{"get issue prefix", req{method: "GET", path: api + "/issues/" + issue[:6]}, 200, `"id":"` + issue},
		{"get issue bad id", req{method: "GET", path: api + "/issues/xyz!"}, 400, `bad id`},
		{"get issue missing", req{method: "GET", path: api + "/issues/ffffffff"}, 404, `no issue`},
		{"patch issue title", req{method: "PATCH", path: api + "/issues/" + issue, who: "alice", body: `{"title":"First, renamed"}`}, 200, `"title":"First, renamed"`},
		{"search finds the new title", req{method: "GET", path: api + "/issues?q=RENAMED"}, 200, `"title":"First, renamed"`},
		{"search short text", req{method: "GET", path: api + "/issues?q=ec"}, 200, other},
		{"search mid-word", req{method: "GET", path: api + "/issues?q=cond"}, 200, `^\[\{"id":"` + other},
		{"search quotes", req{method: "GET", path: api + "/issues?q=%22a%22+OR+b"}, 200, `^\[\]`},
		{"patch issue nothing", req{method: "PATCH", path: api + "/issues/" + issue, who: "alice", body: `{}`}, 400, `nothing to change`},
		{"patch issue bad state", req{method: "PATCH", path: api + "/issues/" + issue, who: "alice", body: `{"state":"done"}`}, 400, `bad state`},
		{"patch issue body", req{method: "PATCH", path: api + "/issues/" + issue, who: "alice", body: `{"body":"x"}`}, 400, `comment`},
		{"patch issue anonymous", req{method: "PATCH", path: api + "/issues/" + issue, body: `{"state":"closed"}`}, 401, `authentication`},
		{"close others' issue without write", req{method: "PATCH", path: api + "/issues/" + issue, who: "dave", body: `{"state":"closed"}`}, 403, `permission denied`},
		{"close own issue", req{method: "PATCH", path: api + "/issues/" + closedByOther, who: "bob", body: `{"state":"closed"}`}, 200, `"state":"closed"`},
		{"reopen", req{method: "PATCH", path: api + "/issues/" + closedByOther, who: "alice", body: `{"state":"open"}`}, 200, `"state":"open"`},

		{"comments empty", req{method: "GET", path: api + "/issues/" + other + "/comments"}, 200, `^\[\]`},
		{"comment anonymous", req{method: "POST", path: api + "/issues/" + other + "/comments", body: `{"body":"x"}`}, 401, `authentication`},
		{"comment empty", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "dave", body: `{"body":""}`}, 400, `empty comment`},
		{"comment", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "dave", body: `{"body":"hello"}`}, 201, `"author":"dave"`},
		{"comments", req{method: "GET", path: api + "/issues/" + other + "/comments"}, 200, `"body":"hello"`},
		{"comment bad lease token", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "dave", body: `{"body":"x"}`, headers: map[string]string{"X-Lease-Token": "abc"}}, 400, `X-Lease-Token`},
		{"comment fenced without lease", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "dave", body: `{"body":"x"}`, headers: map[string]string{"X-Lease-Token": "1"}}, 409, `stale lease token`},

		{"acquire anonymous", req{method: "PUT", path: api + "/issues/" + other + "/lease"}, 401, `authentication`},
		{"acquire reader", req{method: "PUT", path: api + "/issues/" + other + "/lease", who: "dave"}, 403, `write access`},
		{"acquire bad ttl", req{method: "PUT", path: api + "/issues/" + other + "/lease", who: "alice", body: `{"ttl_seconds":0}`}, 400, `ttl_seconds`},
		{"acquire force non-admin", req{method: "PUT", path: api + "/issues/" + other + "/lease", who: "alice", body: `{"force":true}`}, 403, `admin`},
		{"acquire", req{method: "PUT", path: api + "/issues/" + other + "/lease", who: "alice", body: `{"ttl_seconds":600}`}, 200, `"holder":"alice","token":1,.*"expires_at":"20`},
		{"acquire again renews", req{method: "PUT", path: api + "/issues/" + other + "/lease", who: "alice", body: `{"ttl_seconds":900}`}, 200, `"token":1`},
		{"acquire held", req{method: "PUT", path: api + "/issues/" + other + "/lease", who: "bob", body: `{"ttl_seconds":600}`}, 409, `"expires_at":"20.*"holder":"alice"`},
		{"release held", req{method: "DELETE", path: api + "/issues/" + other + "/lease", who: "bob"}, 409, `"holder":"alice"`},
		{"leases", req{method: "GET", path: api + "/leases"}, 200, `"holder":"alice"`},
		{"fenced stale", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "alice", body: `{"body":"x"}`, headers: map[string]string{"X-Lease-Token": "2"}}, 409, `stale lease token 2`},
		{"fenced other principal", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "bob", body: `{"body":"x"}`, headers: map[string]string{"X-Lease-Token": "1"}}, 409, `stale lease token`},
		{"fenced ok", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "alice", body: `{"body":"x"}`, headers: map[string]string{"X-Lease-Token": "1"}}, 201, `"author":"alice"`},
		{"close while leased by other", req{method: "PATCH", path: api + "/issues/" + other, who: "bob", body: `{"state":"closed"}`}, 409, `"holder":"alice"`},
		{"admin overrides", req{method: "PUT", path: api + "/issues/" + other + "/lease", who: "carol", body: `{"force":true}`}, 200, `"holder":"carol","token":2,.*"expires_at":null`},
		{"old holder fenced off", req{method: "POST", path: api + "/issues/" + other + "/comments", who: "alice", body: `{"body":"x"}`, headers: map[string]string{"X-Lease-Token": "1"}}, 409, `stale lease token 1`},
		{"release", req{method: "DELETE", path: api + "/issues/" + other + "/lease", who: "carol"}, 200, `^\{"released":true\}`},
		{"release again", req{method: "DELETE", path: api + "/issues/" + other + "/lease", who: "carol"}, 200, `^\{"released":false\}`},
		{"release with JSON body", req{method: "DELETE", path: api + "/issues/" + other + "/lease", who: "carol", body: `{}`}, 200, `"released":false`},
		{"release with text body", req{method: "DELETE", path: api + "/issues/" + other + "/lease", who: "carol", body: `x`, ctype: "text/plain"}, 415, `application/json`},
		{"leases empty", req{method: "GET", path: api + "/leases"}, 200, `^\[\]`},
		{"lease history", req{method: "GET", path: api + "/issues/" + other}, 200, `"end_reason":"released"`},

		{"patches", req{method: "GET", path: api + "/patches"}, 200, `"id":"` + f.patch},
		{"patches merged", req{method: "GET", path: api + "/patches?state=merged"}, 200, `^\[\]`},
		{"patches bad state", req{method: "GET", path: api + "/patches?state=x"}, 400, `bad state`},
		{"patch", req{method: "GET", path: api + "/patches/abcdef"}, 200, `"revisions":\[\{"number":1`},
		{"patch missing", req{method: "GET", path: api + "/patches/ffff"}, 404, `no patch`},
		{"review anonymous", req{method: "POST", path: api + "/patches/abcdef/reviews", body: `{"verdict":"approve"}`}, 401, `authentication`},
		{"review bad verdict", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"lgtm"}`}, 400, `bad verdict`},
		{"review vote needs write", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "dave", body: `{"verdict":"approve"}`}, 403, `write access`},
		{"review comment by reader", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "dave", body: `{"verdict":"comment","body":"nice"}`}, 201, `"verdict":"comment"`},
		{"review inline", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"comment","body":"why 2?","file":"a.txt","line":2,"revision":2}`}, 201, `"file":"a.txt","line":2`},
		{"review bad anchor", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"comment","body":"x","file":"nope.txt","line":2}`}, 400, `nope.txt`},
		{"review approve", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"approve","body":"ok"}`}, 201, `"verdict":"approve"`},
		{"review stale lease", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"approve"}`, headers: map[string]string{"X-Lease-Token": "1"}}, 400, `give X-Lease-Token: ISSUE:1`},
		{"review comment without body", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"comment"}`}, 400, `a comment needs a body \(\\"body\\"\)`},
		{"review line without file", req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"comment","body":"x","line":2}`}, 400, `\\"line\\" needs \\"file\\"`},
		{"patch reviews", req{method: "GET", path: api + "/patches/" + f.patch}, 200, `"verdict":"approve"`},

		{"events anonymous", req{method: "GET", path: "/api/v1/events"}, 200, `^\[\{"id":[1-9][0-9]*,"event":"patch.created"`},
		{"events hide private", req{method: "GET", path: "/api/v1/events?limit=200"}, 200, `^[^$]*$`},
		{"events bad after", req{method: "GET", path: "/api/v1/events?after=x"}, 400, `bad after`},
		{"events after out of range", req{method: "GET", path: "/api/v1/events?after=9007199254740993"}, 400, `bad after`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := f.do(tt.req)
			if got.status != tt.status || !regexp.MustCompile(tt.want).MatchString(got.body) {
				t.Fatalf("%s %s: got %d %s; want %d matching %q", tt.method, tt.path, got.status, text.Clip(got.body), tt.status, tt.want)
			}
			if strings.HasPrefix(tt.path, "/api/") && !strings.HasPrefix(got.header.Get("Content-Type"), "application/json") {
				t.Errorf("Content-Type %q", got.header.Get("Content-Type"))
			}
			if got.header.Get("X-Content-Type-Options") != "nosniff" || got.header.Get("X-Frame-Options") != "DENY" ||
				!strings.Contains(got.header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
				t.Errorf("security headers missing: %v", got.header)
			}
			// The API names its own fields and headers, never a verb's flags.
			if got.status >= 400 && strings.Contains(got.body, "--") {
				t.Errorf("refusal names a command-line flag: %s", got.body)
			}
			if got.status == 401 && got.header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
	// Events of the private repository reach only its readers.
	anon, mine := f.do(req{method: "GET", path: "/api/v1/events?limit=200"}), f.do(req{method: "GET", path: "/api/v1/events?limit=200", who: "alice"})
	if strings.Contains(anon.body, "secret.git") || !strings.Contains(mine.body, "secret.git") {
		t.Errorf("events: anonymous sees private: %v; alice sees it: %v", strings.Contains(anon.body, "secret.git"), strings.Contains(mine.body, "secret.git"))
	}
	checkEventIDs(t, f)
	if l := f.do(req{method: "GET", path: api + "/issues?limit=1"}).header.Get("Link"); !strings.Contains(l, `rel="next"`) {
		t.Errorf("no Link header on a full page: %q", l)
	}
}

// checkEventIDs: the API's event ids are public ids: every reader sees
// the same id for the same event, pages by passing the last id it got as
// ?after=, and the ids are not the log's own (whose gaps would show where
// the private repository had activity).
func checkEventIDs(t *testing.T, f *fixture) {
	t.Helper()
	type ev struct {
		ID   int64  `json:"id"`
		Repo string `json:"repo"`
	}
	list := func(who, query string) []ev {
		got := f.do(req{method: "GET", path: "/api/v1/events?" + query, who: who})
		var out []ev
		if got.status != 200 || json.Unmarshal([]byte(got.body), &out) != nil {
			t.Fatalf("events %s as %q: %d %s", query, who, got.status, text.Clip(got.body))
		}
		return out
	}
	anon, all := list("", "limit=200"), list("alice", "limit=200")
	if len(anon) < 3 || len(all) <= len(anon) {
		t.Fatalf("events: anonymous %d, alice %d", len(anon), len(all))
	}
	public := map[int64]bool{}
	for _, e := range all {
		public[e.ID] = true
	}
	key, err := f.root.Key()
	if err != nil {
		t.Fatal(err)
	}
	ids := events.NewPublicIDs(key.Seed())
	var paged []ev
	after := "0"
	for range len(anon) + 1 {
		page := list("", "limit=1&after="+after)
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		after = strconv.FormatInt(page[0].ID, 10)
	}
	if len(paged) != len(anon) {
		t.Fatalf("paging one by one gave %d events, the whole list %d", len(paged), len(anon))
	}
	for i, e := range anon {
		logID, ok := ids.Log(e.ID)
		if !ok || paged[i] != e || !public[e.ID] || e.ID == logID || e.ID < 1 || e.ID >= 1<<53 {
			t.Errorf("event %d: id %d (log id %d, %v), paged %+v, in alice's list %v", i, e.ID, logID, ok, paged[i], public[e.ID])
		}
	}
}

func TestTokenLastUsed(t *testing.T) {
	f := newFixture(t)
	f.do(req{method: "GET", path: "/api/v1/repos", who: "bob"})
	ts, err := tokens.List(context.Background(), f.db.R(), "bob")
	if err != nil || len(ts) != 1 || ts[0].LastUsedAt == nil {
		t.Fatalf("tokens of bob after use: %+v %v", ts, err)
	}
	ctx := context.Background()
	if err := f.db.Write(ctx, func(tx *sql.Tx) error { return tokens.Revoke(ctx, tx, "bob", "t") }); err != nil {
		t.Fatal(err)
	}
	if got := f.do(req{method: "GET", path: "/api/v1/repos", who: "bob"}); got.status != 401 {
		t.Fatalf("revoked token: status %d", got.status)
	}
	if err := principals.SetDisabled(context.Background(), f.db, "alice", true); err != nil {
		t.Fatal(err)
	}
	if got := f.do(req{method: "GET", path: "/api/v1/repos", who: "alice"}); got.status != 401 {
		t.Fatalf("disabled principal's token: status %d", got.status)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login signs in as a browser does: the sign-in page first (its cookie
// and the form's CSRF token), then the form's post with form's fields.
func login(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	_, page := get(t, c, u+"/login")
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in page: %s", page)
	}
	form.Set("csrf", m[1])
	return post(t, c, u+"/login", form, hdr)
}

// browser is a cookie-keeping client that does not follow redirects.
func (f *fixture) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func post(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	r, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	res, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestPagesLoginAndCSRF(t *testing.T) {
	f := newFixture(t)
	c := f.browser()
	u := f.srv.URL

	// Anonymous: public pages, no private ones, no forms.
	if st, body := get(t, c, u+"/"); st != 200 || !strings.Contains(body, "org/demo") || strings.Contains(body, "secret") {
		t.Fatalf("/ anonymous: %d %s", st, text.Clip(body))
	}
	if st, _ := get(t, c, u+"/secret/-/issues"); st != 404 {
		t.Fatalf("private page anonymous: %d", st)
	}
	if st, body := get(t, c, u+"/org/demo/-/issues"); st != 200 || strings.Contains(body, `name="csrf"`) {
		t.Fatalf("issues anonymous: %d", st)
	}
	res, _ := post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"x"}}, nil)
	if res.StatusCode != 401 {
		t.Fatalf("anonymous form post: %d", res.StatusCode)
	}

	// A bad token is refused; a good one signs in with a strict cookie.
	res, body := login(t, c, u, url.Values{"token": {"collab_wrong"}}, nil)
	if res.StatusCode != 401 || !strings.Contains(body, "not valid. Make one with: ssh git@forge.test token new") {
		t.Fatalf("bad login: %d %s", res.StatusCode, body)
	}
	res, _ = login(t, c, u, url.Values{"token": {f.tok["alice"]}, "next": {"/secret/-/issues"}}, nil)
	if res.StatusCode != 303 || res.Header.Get("Location") != "/secret/-/issues" {
		t.Fatalf("login: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	sc := res.Header.Get("Set-Cookie")
	if !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
		t.Fatalf("session cookie %q", sc)
	}
	res, _ = login(t, f.browser(), u, url.Values{"token": {f.tok["alice"]}, "next": {"//evil.test/"}}, nil)
	if res.Header.Get("Location") != "/" {
		t.Fatalf("open redirect: %s", res.Header.Get("Location"))
	}
	if st, body := get(t, c, u+"/secret/-/issues"); st != 200 || !strings.Contains(body, "alice") {
		t.Fatalf("private page signed in: %d", st)
	}
	_, body = get(t, c, u+"/org/demo/-/issues")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the signed-in form")
	}
	csrf := m[1]

	// Forms need the session's CSRF token and a same-origin Origin.
	res, _ = post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"no csrf"}}, nil)
	if res.StatusCode != 403 {
		t.Fatalf("post without CSRF: %d", res.StatusCode)
	}
	res, _ = post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"bad csrf"}, "csrf": {"x" + csrf}}, nil)
	if res.StatusCode != 403 {
		t.Fatalf("post with wrong CSRF: %d", res.StatusCode)
	}
	res, _ = post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"cross"}, "csrf": {csrf}}, map[string]string{"Origin": "https://evil.test"})
	if res.StatusCode != 403 {
		t.Fatalf("cross-origin post: %d", res.StatusCode)
	}
	res, _ = post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"Filed from the web"}, "body": {"line\r\nnext"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 303 {
		t.Fatalf("file issue: %d", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	if st, body := get(t, c, u+loc); st != 200 || !strings.Contains(body, "Filed from the web") {
		t.Fatalf("issue page: %d", st)
	}
	res, _ = post(t, c, u+loc+"/comments", url.Values{"body": {"a *web* comment"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 303 {
		t.Fatalf("comment: %d", res.StatusCode)
	}
	res, _ = post(t, c, u+loc+"/state", url.Values{"state": {"closed"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 303 {
		t.Fatalf("close: %d", res.StatusCode)
	}
	if _, body := get(t, c, u+loc); !strings.Contains(body, "<em>web</em>") || !strings.Contains(body, `id="reopen"`) {
		t.Fatalf("issue page after comment and close: %s", text.Clip(body))
	}
	// Reviews from the patch page's form, inline ones too.
	pp := u + "/org/demo/-/patches/" + f.patch
	if _, body := get(t, c, pp); !strings.Contains(body, `id="review-form"`) {
		t.Fatalf("no review form for a signed-in writer")
	}
	res, _ = post(t, c, pp+"/reviews", url.Values{"verdict": {"approve"}, "body": {"no csrf"}}, nil)
	if res.StatusCode != 403 {
		t.Fatalf("review without CSRF: %d", res.StatusCode)
	}
	// A refused review comes back in place: the page, what was typed,
	// and why (422).
	res, body = post(t, c, pp+"/reviews", url.Values{"verdict": {"lgtm"}, "body": {"Kept <text>"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 422 || !strings.Contains(body, `id="review-error"`) || !strings.Contains(body, "Kept &lt;text&gt;</textarea>") {
		t.Fatalf("review with a bad verdict: %d\n%s", res.StatusCode, body)
	}
	res, _ = post(t, c, pp+"/reviews", url.Values{"verdict": {"comment"}, "body": {"Line *two*?"}, "file": {"a.txt"}, "line": {"2"}, "revision": {"2"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 303 {
		t.Fatalf("inline review: %d", res.StatusCode)
	}
	if _, body := get(t, c, u+res.Header.Get("Location")); !strings.Contains(body, `class="inline-comment"`) || !strings.Contains(body, "<em>two</em>") {
		t.Fatalf("inline comment not under its line: %s", text.Clip(body))
	}
	res, _ = post(t, c, pp+"/reviews", url.Values{"verdict": {"approve"}, "body": {"ok"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 303 {
		t.Fatalf("approve: %d", res.StatusCode)
	}
	if _, body := get(t, c, pp); !strings.Contains(body, "approved by alice") {
		t.Fatalf("summary after approve: %s", text.Clip(body))
	}

	// The API ignores the cookie: a browser session cannot write there.
	r, _ := http.NewRequest("POST", u+"/api/v1/repos/org%2Fdemo/issues", strings.NewReader(`{"title":"x"}`))
	r.Header.Set("Content-Type", "application/json")
	ares, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	ares.Body.Close()
	if ares.StatusCode != 401 {
		t.Fatalf("API with only a cookie: %d", ares.StatusCode)
	}
	// Sign out ends the session.
	res, _ = post(t, c, u+"/logout", url.Values{"csrf": {csrf}}, nil)
	if res.StatusCode != 303 {
		t.Fatalf("logout: %d", res.StatusCode)
	}
	if st, _ := get(t, c, u+"/secret/-/issues"); st != 404 {
		t.Fatalf("private page after logout: %d", st)
	}
}

func TestPages(t *testing.T) {
	f := newFixture(t)
	issue := f.newIssue("alice", "Leased one")
	f.do(req{method: "PUT", path: "/api/v1/repos/org%2Fdemo/issues/" + issue + "/lease", who: "bob", body: `{"ttl_seconds":600}`})
	f.do(req{method: "POST", path: "/api/v1/repos/org%2Fdemo/patches/abcdef/reviews", who: "bob", body: `{"verdict":"comment","body":"why 2?","file":"a.txt","line":2,"revision":2}`})
	c := f.browser()
	u := f.srv.URL
	tests := []struct {
		path   string
		status int
		want   []string
	}{
		{"/org/demo/-/issues", 200, []string{"Leased one", "claimed by bob until"}},
		{"/org/demo.git/-/issues?state=closed", 200, []string{"No closed issues"}},
		{"/org/demo/-/issues?q=leased", 200, []string{"Leased one"}},
		{"/org/demo/-/issues?q=zzz", 200, []string{"matching"}},
		{"/org/demo/-/issues/" + issue[:8], 302, nil},
		{"/org/demo/-/issues/" + issue, 200, []string{"Leased one", "claimed by bob", "token 1", `id="tenures"`}},
		{"/org/demo/-/issues/ffffffff", 404, []string{"no issue"}},
		{"/org/demo/-/leases", 200, []string{"bob", "Leased one"}},
		{"/org/demo/-/patches", 200, []string{"Change two", "2 revisions"}},
		{"/org/demo/-/patches/" + f.patch, 200, []string{"Revision 2", `class="add"`, "four", "why 2?", "Timeline"}},
		{"/org/demo/-/patches/" + f.patch + "?rev=1", 200, []string{"Revision 1", "-two", "&#43;2"}},
		{"/org/demo/-/patches/" + f.patch + "?from=1&to=2", 200, []string{"Interdiff 1 → 2", "&#43;four"}},
		{"/org/demo/-/patches/" + f.patch + "?rev=9", 404, nil},
		{"/org/demo/-/patches/" + f.patch + "?from=1&to=9", 404, []string{"has no revision 9"}},
		{"/org/demo/-/patches/" + f.patch + "?from=x&to=2", 400, []string{"bad revision"}},
		{"/org/demo/-/patches/" + f.patch + "?from=1&to=x", 400, []string{"bad revision"}},
		{"/org/demo/-/patches/" + f.patch + "?rev=0", 400, []string{"numbered from 1"}},
		{"/org/demo/-/patches/" + f.patch + "?rev=-1", 400, nil},
		{"/org/demo/-/ref/" + issue[:6], 302, nil},
		{"/org/demo/-/ref/abcdef", 302, nil},
		{"/org/demo", 200, []string{"git clone", "Recent commits on main"}},
		{"/secret", 404, nil},
		{"/nope/-/issues", 404, nil},
		{"/-/static/style.css", 200, []string{"font"}},
		{"/login", 200, []string{"Token"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			st, body := get(t, c, u+tt.path)
			if st != tt.status {
				t.Fatalf("status %d, want %d: %s", st, tt.status, text.Clip(body))
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q: %s", w, text.Clip(body))
				}
			}
		})
	}
	// The interdiff shows only the author's change between the revisions.
	_, body := get(t, c, u+"/org/demo/-/patches/"+f.patch+"?from=1&to=2")
	if strings.Contains(body, "-two") {
		t.Errorf("interdiff shows revision 1's own change")
	}
}

func TestServerTimeouts(t *testing.T) {
	s := NewHTTPServer("127.0.0.1:0", http.NotFoundHandler(), discard())
	if s.ReadHeaderTimeout == 0 || s.ReadTimeout == 0 || s.WriteTimeout == 0 || s.IdleTimeout == 0 || s.MaxHeaderBytes == 0 {
		t.Fatalf("server without timeouts: %+v", s)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestAPIMatchesVerbs: the API returns the same objects as the SSH verbs'
// --json, field for field, for the same principal.
func TestAPIMatchesVerbs(t *testing.T) {
	f := newFixture(t)
	api := "/api/v1/repos/org%2Fdemo"
	f.do(req{method: "POST", path: api + "/issues", who: "alice", body: `{"title":"Crash","body":"see org/demo#abcdef01"}`})
	f.do(req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"comment","body":"why?","file":"a.txt","line":2,"revision":1}`})
	f.do(req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"approve"}`})
	var list []map[string]any
	if err := json.Unmarshal([]byte(f.do(req{method: "GET", path: api + "/issues", who: "alice"}).body), &list); err != nil || len(list) != 1 {
		t.Fatalf("issues: %v %v", err, list)
	}
	issue := list[0]["id"].(string)
	for _, c := range []struct{ verb, path string }{
		{"repo list", "/api/v1/repos"},
		{"issue list org/demo", api + "/issues"},
		{"issue show org/demo " + issue, api + "/issues/" + issue},
		{"lease list org/demo", api + "/leases"},
		{"patch list org/demo", api + "/patches"},
		{"patch show org/demo " + f.patch, api + "/patches/" + f.patch},
	} {
		var out, errb strings.Builder
		env := &verbs.Env{Root: f.root, DB: f.db, Principal: "alice", Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, URL: "http://forge.test"}
		if code := verbs.Run(context.Background(), env, append(strings.Fields(c.verb), "--json")); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.verb, code, errb.String())
		}
		var want, got any
		if err := json.Unmarshal([]byte(out.String()), &want); err != nil {
			t.Fatal(err)
		}
		res := f.do(req{method: "GET", path: c.path, who: "alice"})
		if err := json.Unmarshal([]byte(res.body), &got); err != nil {
			t.Fatalf("GET %s: %d %s", c.path, res.status, res.body)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s differs from %s --json:\n api: %s\nverb: %s", c.path, c.verb, text.Clip(res.body), text.Clip(out.String()))
		}
	}
	// A posted review is the object `patch review --json` prints.
	res := f.do(req{method: "POST", path: api + "/patches/abcdef/reviews", who: "bob", body: `{"verdict":"comment","body":"x","revision":1}`})
	if res.status != 201 || !strings.Contains(res.body, `"outdated":true`) {
		t.Errorf("review: %d %s", res.status, res.body)
	}
}

// TestFieldWord: refusals name input fields as the API takes them, never
// as a verb's flags.
func TestFieldWord(t *testing.T) {
	for field, want := range map[string]string{ops.FieldLine: `"line"`, ops.FieldLeaseToken: "X-Lease-Token:", ops.FieldBody: `"body"`} {
		if got := fieldWord(field); got != want {
			t.Errorf("fieldWord(%q) = %q, want %q", field, got, want)
		}
	}
}

// Writes through the API and through the pages' forms spend from one
// bucket per principal (ops counts every write): past it both answer 429
// with Retry-After and write nothing; reads and other principals go on. A
// form's title holding a control character is refused like the API's.
func TestRateLimitAPIAndForms(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	err := f.db.Write(ctx, func(tx *sql.Tx) error {
		if err := store.SetSetting(ctx, tx, ratelimit.SettingBurst, "3"); err != nil {
			return err
		}
		return store.SetSetting(ctx, tx, ratelimit.SettingRefill, "0.001")
	})
	if err != nil {
		t.Fatal(err)
	}
	c, u := f.browser(), f.srv.URL
	if res, _ := login(t, c, u, url.Values{"token": {f.tok["bob"]}}, nil); res.StatusCode != 303 {
		t.Fatalf("login: %d", res.StatusCode)
	}
	_, page := get(t, c, u+"/org/demo/-/issues")
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in the signed-in form")
	}
	csrf := m[1]
	// A title with a control character is refused before any write, so it
	// spends nothing (ops checks titles first, for every transport).
	for range 4 {
		res, body := post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"\x1b]0;pwned\x07"}, "csrf": {csrf}}, nil)
		if res.StatusCode != 400 || !strings.Contains(body, `title holds the control character \x1b at byte 0`) {
			t.Fatalf("form with an escape in its title: %d %s", res.StatusCode, text.Clip(body))
		}
	}
	if got := f.do(req{method: "POST", path: "/api/v1/repos/org/demo/issues", who: "bob", body: `{"title":"api one"}`}); got.status != 201 {
		t.Fatalf("API write 1: %d %s", got.status, got.body)
	}
	res, _ := post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"form two"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 303 {
		t.Fatalf("form write 2: %d", res.StatusCode)
	}
	loc := res.Header.Get("Location")
	if res, _ = post(t, c, u+loc+"/comments", url.Values{"body": {"three"}, "csrf": {csrf}}, nil); res.StatusCode != 303 {
		t.Fatalf("form write 3: %d", res.StatusCode)
	}

	res, body := post(t, c, u+"/org/demo/-/issues", url.Values{"title": {"form four"}, "csrf": {csrf}}, nil)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "1000" || !strings.Contains(body, "rate limit: bob made more than 3 writes") {
		t.Fatalf("form write past the burst: %d Retry-After %q %s", res.StatusCode, res.Header.Get("Retry-After"), text.Clip(body))
	}
	got := f.do(req{method: "POST", path: "/api/v1/repos/org/demo/issues", who: "bob", body: `{"title":"api four"}`})
	if got.status != 429 || got.header.Get("Retry-After") != "1000" || !strings.Contains(got.body, `"error":"rate limit: bob`) {
		t.Fatalf("API write past the burst: %d Retry-After %q %s", got.status, got.header.Get("Retry-After"), got.body)
	}
	got = f.do(req{method: "GET", path: "/api/v1/repos/org/demo/issues?state=all", who: "bob"})
	if got.status != 200 || !strings.Contains(got.body, "form two") || strings.Contains(got.body, "four") {
		t.Fatalf("bob's read after the refusals: %d %s", got.status, got.body)
	}
	if got := f.do(req{method: "POST", path: "/api/v1/repos/org/demo/issues", who: "alice", body: `{"title":"alice's"}`}); got.status != 201 {
		t.Fatalf("another principal: %d %s", got.status, got.body)
	}
}
