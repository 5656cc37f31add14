package web

import (
	"context"
	"database/sql"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/patches"
)

// The patch page's Submit button is a form post like the others: without
// the session's CSRF token, with a wrong one or from a foreign origin it
// is refused (403); a reader's post is refused (403) even with the token;
// a writer's while a requirement is unmet is 409 and shows it. None of
// them moves the branch or records anything; once approved, the writer's
// post merges and returns to the patch.
func TestSubmitForm(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	u := f.srv.URL
	bare := filepath.Join(f.root.ReposDir(), "org", "demo.git")
	// A patch of one commit off main, as alice pushed it.
	work := t.TempDir()
	git(t, work, "clone", "-q", "--no-local", bare, ".")
	if err := os.WriteFile(filepath.Join(work, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", ".")
	git(t, work, "commit", "-qm", "Add b")
	base, commit := git(t, work, "rev-parse", "HEAD~"), git(t, work, "rev-parse", "HEAD")
	git(t, bare, "fetch", "-q", work, "HEAD:refs/test/b") // a fetch runs no receive hooks
	const id = "b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0"
	err := f.db.Write(ctx, func(tx *sql.Tx) error {
		now := time.Now()
		if _, err := patches.Create(ctx, tx, patches.New{Repo: "org/demo.git", ID: id, Title: "Add b", Author: "alice", Base: "main"}, now); err != nil {
			return err
		}
		_, _, err := patches.AddRevision(ctx, tx, "org/demo.git", id, commit, base, "alice", now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.do(req{method: "PUT", path: "/api/v1/repos/org%2Fdemo/branches/main/protection", who: "carol", body: `{}`}); got.status != 200 {
		t.Fatalf("protect: %d %s", got.status, got.body)
	}
	pp := u + "/org/demo/-/patches/" + id
	unmoved := func(what string) {
		t.Helper()
		if tip := git(t, bare, "rev-parse", "refs/heads/main"); tip != base {
			t.Fatalf("%s moved main to %s", what, tip)
		}
		var state string
		f.db.R().QueryRowContext(ctx, "SELECT state FROM patches WHERE id = ?", id).Scan(&state)
		var n int
		f.db.R().QueryRowContext(ctx, "SELECT COUNT(*) FROM events WHERE event = 'merge.recorded'").Scan(&n)
		if state != "open" || n != 0 {
			t.Fatalf("%s: patch %s, %d merge records", what, state, n)
		}
	}
	signIn := func(who string) (*http.Client, string) {
		t.Helper()
		c := f.browser()
		if res, _ := login(t, c, u, url.Values{"token": {f.tok[who]}}, nil); res.StatusCode != 303 {
			t.Fatalf("sign in %s: %d", who, res.StatusCode)
		}
		_, page := get(t, c, pp)
		m := csrfRE.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no CSRF token on the patch page for %s", who)
		}
		return c, page
	}
	csrfOf := func(page string) string { return csrfRE.FindStringSubmatch(page)[1] }

	// dave may read the public repository, not write: no button, and a
	// post with the token is refused.
	c, page := signIn("dave")
	if strings.Contains(page, `id="submit-button"`) {
		t.Fatal("a Submit button for a reader")
	}
	if res, body := post(t, c, pp+"/submit", url.Values{"csrf": {csrfOf(page)}}, nil); res.StatusCode != 403 || !strings.Contains(body, "write access") {
		t.Fatalf("reader's submit: %d %.300s", res.StatusCode, body)
	}
	unmoved("a reader's submit")

	// alice writes; her posts without the token, with a wrong one or from
	// elsewhere are refused before anything is decided.
	c, page = signIn("alice")
	csrf := csrfOf(page)
	for name, tc := range map[string]struct {
		form url.Values
		hdr  map[string]string
	}{
		"no token":       {url.Values{}, nil},
		"wrong token":    {url.Values{"csrf": {"x" + csrf}}, nil},
		"foreign origin": {url.Values{"csrf": {csrf}}, map[string]string{"Origin": "https://evil.test"}},
		"cross-site":     {url.Values{"csrf": {csrf}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
	} {
		if res, _ := post(t, c, pp+"/submit", tc.form, tc.hdr); res.StatusCode != 403 {
			t.Fatalf("submit, %s: %d", name, res.StatusCode)
		}
		unmoved("a submit with " + name)
	}
	// With the token but no approval: 409, saying what is missing.
	if strings.Contains(page, `id="submit-button"`) {
		t.Fatal("a Submit button while an approval is missing")
	}
	if res, body := post(t, c, pp+"/submit", url.Values{"csrf": {csrf}}, nil); res.StatusCode != 409 || !strings.Contains(body, "approvals (0 of 1") {
		t.Fatalf("submit without approval: %d %.300s", res.StatusCode, body)
	}
	unmoved("a submit without approval")

	// bob approves: the button shows, and alice's post merges.
	if got := f.do(req{method: "POST", path: "/api/v1/repos/org%2Fdemo/patches/" + id + "/reviews", who: "bob", body: `{"verdict":"approve","body":"ok"}`}); got.status != 201 {
		t.Fatalf("approve: %d %s", got.status, got.body)
	}
	if _, page = get(t, c, pp); !strings.Contains(page, `id="submit-button"`) {
		t.Fatal("no Submit button once every requirement holds")
	}
	res, _ := post(t, c, pp+"/submit", url.Values{"csrf": {csrf}}, nil)
	if res.StatusCode != 303 || res.Header.Get("Location") != "/org/demo/-/patches/"+id {
		t.Fatalf("submit: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	var state, by, at string
	f.db.R().QueryRowContext(ctx, "SELECT state, merged_by, merged_commit FROM patches WHERE id = ?", id).Scan(&state, &by, &at)
	// A merge commit: the record names the revision it merged.
	if tip := git(t, bare, "rev-parse", "refs/heads/main"); tip == base || at != commit || state != "merged" || by != "alice" {
		t.Fatalf("after submit: main %s, patch %q by %q at %s", tip, state, by, at)
	}
}
