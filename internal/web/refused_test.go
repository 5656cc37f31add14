package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A form the forge refuses for what was typed comes back in place: the
// page again (422), the form holding the text, and why, beside it; and
// nothing was written.
func TestRefusedFormsKeepText(t *testing.T) {
	f := newFixture(t)
	u := f.srv.URL
	issue := f.newIssue("bob", "Held by bob")
	if r := f.do(req{method: "PUT", path: "/api/v1/repos/org/demo/issues/" + issue + "/lease", who: "bob", body: `{"ttl_seconds": 3600}`}); r.status != http.StatusOK {
		t.Fatalf("bob's lease: %d %s", r.status, r.body)
	}
	signIn := func(who string) (*http.Client, string) {
		c := f.browser()
		if res, _ := login(t, c, u, url.Values{"token": {f.tok[who]}}, nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("login %s: %d", who, res.StatusCode)
		}
		_, body := get(t, c, u+"/org/demo/-/issues/"+issue)
		m := csrfRE.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no CSRF token for %s", who)
		}
		return c, m[1]
	}
	c, csrf := signIn("alice")
	ip, pp := u+"/org/demo/-/issues/"+issue, u+"/org/demo/-/patches/"+f.patch
	tests := []struct {
		name, path, form string
		values           url.Values
		// kept is what the page shows again of what was typed.
		kept string
	}{
		{"an empty comment", ip + "/comments", "comment", url.Values{"body": {"  "}}, ""},
		{"a comment over its budget", ip + "/comments", "comment", url.Values{"body": {strings.Repeat("x", 1<<20+10)}}, "xxxxxxxx</textarea>"},
		{"a title with a control character", ip + "/edit", "issue-edit", url.Values{"title": {"Bell\a here"}, "body": {"Kept body"}}, "Kept body</textarea>"},
		{"a label that is no label", ip + "/labels", "labels", url.Values{"labels": {"ok no/such/label!"}}, `value="ok no/such/label!"`},
		{"a claim on an issue bob holds", ip + "/claim", "claim", url.Values{}, ""},
		{"a patch title with a control character", pp + "/edit", "patch-edit", url.Values{"edit": {"1"}, "title": {"Bell\a"}, "description": {"Kept description"}}, "Kept description</textarea>"},
		{"a reviewer nobody is", pp + "/edit", "reviewers", url.Values{"add": {"nobody@example.com"}}, `value="nobody@example.com"`},
		{"a review with a bad verdict", pp + "/reviews", "review", url.Values{"verdict": {"lgtm"}, "body": {"Kept review"}, "revision": {"1"}}, "Kept review</textarea>"},
		{"a link to an issue that is not there", ip + "/links", "link", url.Values{"other": {"#dead1234"}, "kind": {"blocks"}}, `value="#dead1234"`},
		{"a link to itself", ip + "/links", "link", url.Values{"other": {"#" + issue}}, `value="#` + issue + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before int
			f.db.R().QueryRow("SELECT count(*) FROM events").Scan(&before)
			tt.values.Set("csrf", csrf)
			res, body := post(t, c, tt.path, tt.values, nil)
			if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, `id="`+tt.form+`-error"`) {
				t.Fatalf("%d, want 422 and #%s-error:\n%s", res.StatusCode, tt.form, body)
			}
			if !strings.Contains(body, tt.kept) {
				t.Fatalf("the page lost what was typed (%q):\n%s", tt.kept, body)
			}
			var after int
			f.db.R().QueryRow("SELECT count(*) FROM events").Scan(&after)
			if after != before {
				t.Fatalf("%d events written by a refused form", after-before)
			}
		})
	}
}

// The issue page's link form links and unlinks, and both issues show it.
func TestLinkForm(t *testing.T) {
	f := newFixture(t)
	u := f.srv.URL
	a, b := f.newIssue("alice", "First"), f.newIssue("alice", "Second")
	c := f.browser()
	if res, _ := login(t, c, u, url.Values{"token": {f.tok["alice"]}}, nil); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", res.StatusCode)
	}
	_, body := get(t, c, u+"/org/demo/-/issues/"+a)
	m := csrfRE.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `id="link-form"`) {
		t.Fatalf("no link form for a writer:\n%s", body)
	}
	res, _ := post(t, c, u+"/org/demo/-/issues/"+a+"/links", url.Values{"csrf": {m[1]}, "other": {"#" + b}, "kind": {"blocks"}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("link: %d", res.StatusCode)
	}
	_, body = get(t, c, u+"/org/demo/-/issues/"+b)
	if !strings.Contains(body, `blocked by <span class="state open">open</span>`) || !strings.Contains(body, `id="unlink-`+a+`"`) {
		t.Fatalf("the other issue does not show the link:\n%s", body)
	}
	res, _ = post(t, c, u+"/org/demo/-/issues/"+b+"/links", url.Values{"csrf": {m[1]}, "other": {"org/demo#" + a}, "unlink": {"1"}}, nil)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("unlink: %d", res.StatusCode)
	}
	if _, body = get(t, c, u+"/org/demo/-/issues/"+a); strings.Contains(body, `id="links"`) {
		t.Fatalf("the link outlived its unlink:\n%s", body)
	}
}
