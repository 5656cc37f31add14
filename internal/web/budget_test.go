package web

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/text"
)

// server is another Server over f's forge, with cfg's budgets.
func (f *fixture) server(cfg Config) (*Server, *httptest.Server) {
	f.t.Helper()
	cfg.Root, cfg.DB, cfg.URL = f.root, f.db, "http://forge.test"
	s, err := New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	f.t.Cleanup(hs.Close)
	return s, hs
}

var commentRE = regexp.MustCompile(`<article class="comment" id="c-([0-9a-f]{40})">`)

// Twenty comments of 1 MiB: the issue page shows them a few at a time
// (here one, each being over the page's byte budget), every page is
// bounded, and following "Later comments" reaches each exactly once.
func TestIssuePageBudget(t *testing.T) {
	f := newFixture(t)
	id := f.newIssue("alice", "Huge comments")
	big := strings.Repeat("word ", (issues.MaxBody-16)/5)
	err := f.db.Write(context.Background(), func(tx *sql.Tx) error {
		for i := 0; i < 20; i++ {
			if _, err := issues.AddComment(context.Background(), tx, "org/demo.git", id, "bob", big, time.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c := f.browser()
	next := "/org/demo/-/issues/" + id
	seen := map[string]bool{}
	for pages := 0; next != ""; pages++ {
		if pages > 20 {
			t.Fatalf("more pages than comments")
		}
		st, body := get(t, c, f.srv.URL+next)
		if st != 200 {
			t.Fatalf("%s: %d %s", next, st, text.Clip(body))
		}
		if len(body) > 3<<20 {
			t.Fatalf("%s: a page of %d bytes", next, len(body))
		}
		ids := commentRE.FindAllStringSubmatch(body, -1)
		if len(ids) != 1 || !strings.Contains(body, `id="comment-count">20<`) {
			t.Fatalf("%s: %d comments on the page", next, len(ids))
		}
		for _, m := range ids {
			if seen[m[1]] {
				t.Fatalf("comment %s shown twice", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := regexp.MustCompile(`id="next-comments"|rel="next" href="([^"]+)"`).FindStringSubmatch(body); m != nil && m[1] != "" {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != 20 {
		t.Fatalf("reached %d of 20 comments", len(seen))
	}

	// The API pages its comments the same way, with a Link to the next.
	var got []issues.Comment
	url := "/api/v1/repos/org%2Fdemo/issues/" + id + "/comments?limit=50"
	for n := 0; url != ""; n++ {
		r := f.do(req{method: "GET", path: url})
		if r.status != 200 || len(r.body) > 6<<20 {
			t.Fatalf("%s: %d, %d bytes", url, r.status, len(r.body))
		}
		var page []issues.Comment
		if err := json.Unmarshal([]byte(r.body), &page); err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		url = ""
		if m := regexp.MustCompile(`<([^>]+)>; rel="next"`).FindStringSubmatch(r.header.Get("Link")); m != nil {
			url = m[1]
		}
		if n > 20 {
			t.Fatal("the API's pages do not end")
		}
	}
	if len(got) != 20 {
		t.Fatalf("the API's pages hold %d comments", len(got))
	}
	r := f.do(req{method: "GET", path: "/api/v1/repos/org%2Fdemo/issues/" + id + "/comments?limit=2&after=" + got[17].ID})
	if r.status != 200 || r.header.Get("Link") != "" || strings.Count(r.body, `"id"`) != 2 {
		t.Fatalf("the last page: %d %q %d", r.status, r.header.Get("Link"), strings.Count(r.body, `"id"`))
	}
}

// Past the expensive pages' limit, they answer 503 with Retry-After and
// cheap pages go on.
func TestExpensivePagesLimit(t *testing.T) {
	f := newFixture(t)
	s, hs := f.server(Config{Expensive: 1, SlotWait: 10 * time.Millisecond})
	c := f.browser()
	s.slots.acquire(context.Background(), "address elsewhere", 0) // another expensive page is running
	for _, p := range []string{"/org/demo/-/patches/" + f.patch, "/org/demo/-/blob/main/a.txt", "/org/demo/-/tree/main", "/org/demo/-/commits/main", "/org/demo"} {
		res, err := c.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
			t.Errorf("%s while busy: %d, Retry-After %q", p, res.StatusCode, res.Header.Get("Retry-After"))
		}
	}
	if st, _ := get(t, c, hs.URL+"/org/demo/-/issues"); st != 200 {
		t.Errorf("a cheap page while busy: %d", st)
	}
	s.slots.release("address elsewhere")
	if st, _ := get(t, c, hs.URL+"/org/demo/-/patches/"+f.patch); st != 200 {
		t.Errorf("the patch page once free: %d", st)
	}
}

// A request past its deadline stops its work: with a git whose diff never
// ends, the patch page answers 503 soon after the deadline instead of
// waiting for git, and the API answers JSON.
func TestDeadlineStopsTheWork(t *testing.T) {
	f := newFixture(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	slow := "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = diff ] && exec sleep 600; done\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(slow), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	_, hs := f.server(Config{Deadline: 2 * time.Second})
	c := f.browser()
	start := time.Now()
	res, err := c.Get(hs.URL + "/org/demo/-/patches/" + f.patch)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if took := time.Since(start); res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || took > 60*time.Second {
		t.Fatalf("patch page with a stuck git: %d after %s", res.StatusCode, took)
	}
	// A tiny deadline cancels even the database reads; the API says so
	// in JSON.
	_, hs = f.server(Config{Deadline: time.Nanosecond})
	res, err = http.Get(hs.URL + "/api/v1/repos/org%2Fdemo/issues")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	_ = json.NewDecoder(res.Body).Decode(&body)
	res.Body.Close()
	if res.StatusCode != 503 || !strings.Contains(body["error"], "too long") {
		t.Fatalf("API past its deadline: %d %v", res.StatusCode, body)
	}
}

// Lists carry comment counts, lease holders, revision counts and review
// state; an issue closed by a merge says by which patch, where and who.
func TestListsAndClosedBy(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.newIssue("alice", "Fixed by the patch")
	f.do(req{method: "POST", path: "/api/v1/repos/org%2Fdemo/issues/" + id + "/comments", who: "bob", body: `{"body":"one"}`})
	f.do(req{method: "POST", path: "/api/v1/repos/org%2Fdemo/issues/" + id + "/comments", who: "bob", body: `{"body":"two"}`})
	f.do(req{method: "PUT", path: "/api/v1/repos/org%2Fdemo/issues/" + id + "/lease", who: "bob", body: `{"ttl_seconds":600}`})
	f.do(req{method: "POST", path: "/api/v1/repos/org%2Fdemo/patches/abcdef/reviews", who: "bob", body: `{"verdict":"approve","body":"ok"}`})
	c := f.browser()
	if _, body := get(t, c, f.srv.URL+"/org/demo/-/issues"); !strings.Contains(body, "2 comments") || !strings.Contains(body, "claimed by bob") {
		t.Fatalf("issues list: %s", text.Clip(body))
	}
	if _, body := get(t, c, f.srv.URL+"/org/demo/-/patches"); !strings.Contains(body, "2 revisions") || !strings.Contains(body, "approved by bob") {
		t.Fatalf("patches list: %s", body)
	}
	now := time.Now()
	err := f.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := patches.LinkIssue(ctx, tx, "org/demo.git", f.patch, id); err != nil {
			return err
		}
		// As the merge scan does: the merge and the close in one
		// transaction, at one time.
		if _, err := patches.RecordMerge(ctx, tx, "org/demo.git", f.patch, "main", "0000000000000000000000000000000000000001", "carol", now); err != nil {
			return err
		}
		return issues.CloseByMerge(ctx, tx, "org/demo.git", id, "carol", "0000000000000000000000000000000000000001", now)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, c, f.srv.URL+"/org/demo/-/issues/"+id)
	if !regexp.MustCompile(`Closed by patch <a [^>]+><code>abcdef0123</code></a> \(Change two\), merged into <b>main</b> by <b>carol</b>`).MatchString(body) {
		t.Fatalf("issue page: %s", body)
	}
}
