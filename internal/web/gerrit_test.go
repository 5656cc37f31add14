package web

import (
	"context"
	"database/sql"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/patches"
)

// The patch page shows what Gerrit's push options recorded: reviewers
// asked, hashtags, a revision's message.
func TestPatchPageGerrit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	err := f.db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := patches.AddReviewers(ctx, tx, "org/demo.git", f.patch, []string{"bob", "carol"}, "alice", time.Now()); err != nil {
			return err
		}
		if _, err := patches.AddHashtags(ctx, tx, "org/demo.git", f.patch, []string{"parser"}); err != nil {
			return err
		}
		return patches.SetRevisionMessage(ctx, tx, "org/demo.git", f.patch, 2, "Rebased on <main>")
	})
	if err != nil {
		t.Fatal(err)
	}
	c := f.browser()
	_, body := get(t, c, f.srv.URL+"/org/demo/-/patches/"+f.patch)
	for _, want := range []string{
		`id="reviewers">Reviewers asked: <b>bob</b>, <b>carol</b>`,
		`<span class="badge">#parser</span>`,
		`id="message-2">Rebased on &lt;main&gt;</div>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("patch page lacks %s", want)
		}
	}
	if strings.Contains(body, `id="message-1"`) {
		t.Errorf("revision 1 has no message, yet one is shown")
	}

	// The API's list filters by a reviewer asked, as patch list --reviewer.
	api := "/api/v1/repos/org%2Fdemo/patches"
	for _, tc := range []struct {
		query  string
		status int
		want   string
	}{
		{"?reviewer=bob", 200, `"id":"` + f.patch + `"`},
		{"?reviewer=zed&state=all", 200, "^\\[\\]\n$"},
		{"?reviewer=Bob", 400, `{"error":"bad \\"reviewer\\" \\"Bob\\": want a principal name"}`},
	} {
		got := f.do(req{method: "GET", path: api + tc.query})
		if got.status != tc.status || !regexp.MustCompile(tc.want).MatchString(got.body) {
			t.Errorf("GET %s%s: %d %s, want %d and %s", api, tc.query, got.status, got.body, tc.status, tc.want)
		}
	}
}
