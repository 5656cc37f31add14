package ops

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/patches"
)

// TestFindPatches: the reads gerrit query makes, a repository's patches
// or an id looked for in every repository the actor may read, and what
// matches nothing rather than failing.
func TestFindPatches(t *testing.T) {
	w := newWorld(t)
	const p1 = "1111111111111111111111111111111111111111"
	const p2 = "2222222222222222222222222222222222222222"
	const other = "1111aaaa11111111111111111111111111111111"
	// git-review -d sends an id that starts with c's without them.
	const cc = "cc3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d"
	const ccTwin = "3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d3d"
	err := w.s.DB.Write(w.ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			"INSERT INTO repos(name, created_at) VALUES ('secret.git', 'x')",
			"INSERT INTO grants(principal, repo, level) VALUES ('root','secret.git','admin')",
		} {
			if _, err := tx.ExecContext(w.ctx, q); err != nil {
				return err
			}
		}
		for _, n := range []patches.New{
			{Repo: "demo.git", ID: p1, Title: "one", Author: "alice", Base: "main"},
			{Repo: "demo.git", ID: p2, Title: "two", Author: "bob", Base: "main"},
			{Repo: "secret.git", ID: other, Title: "hidden", Author: "root", Base: "main"},
			{Repo: "demo.git", ID: cc, Title: "see", Author: "alice", Base: "main"},
			{Repo: "secret.git", ID: ccTwin, Title: "hidden twin", Author: "root", Base: "main"},
		} {
			if _, err := patches.Create(w.ctx, tx, n, w.now); err != nil {
				return err
			}
			if _, _, err := patches.AddRevision(w.ctx, tx, n.Repo, n.ID, strings.Repeat("c", 40), strings.Repeat("b", 40), n.Author, w.now); err != nil {
				return err
			}
		}
		_, err := patches.SetState(w.ctx, tx, "demo.git", p2, patches.Closed, "bob", w.now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ls []string) string { return strings.Join(ls, " ") }
	tests := []struct {
		name string
		who  string
		in   FindPatches
		want string // the ids found, in order
		kind fault.Kind
	}{
		{"a project's patches, newest first", "carol", FindPatches{Repo: "demo", Limit: 500}, cc + " " + p2 + " " + p1, 0},
		{"status", "carol", FindPatches{Repo: "demo", State: "OPEN", Limit: 500}, cc + " " + p1, 0},
		{"limit", "carol", FindPatches{Repo: "demo", Limit: 1}, cc, 0},
		{"a change in every readable repository", "carol", FindPatches{ID: "1111", Limit: 500}, p1, 0},
		{"the admin reads both", "root", FindPatches{ID: p1, Limit: 500}, p1, 0},
		{"by prefix in another repository", "root", FindPatches{ID: "1111aa", Limit: 500}, other, 0},
		{"a change and its project", "carol", FindPatches{Repo: "demo.git", ID: p2, Limit: 500}, p2, 0},
		{"a change in another state", "carol", FindPatches{ID: p2, State: "open", Limit: 500}, "", 0},
		{"an unreadable project matches nothing", "mallory", FindPatches{Repo: "demo", Limit: 500}, "", 0},
		{"a missing project matches nothing", "carol", FindPatches{Repo: "nope", Limit: 500}, "", 0},
		{"an unreadable change matches nothing", "carol", FindPatches{ID: other, Limit: 500}, "", 0},
		{"no change by that id", "carol", FindPatches{ID: "abcdef12", Limit: 500}, "", 0},
		{"an id git-review stripped of its c's", "carol", FindPatches{ID: cc[2:], Limit: 500}, cc, 0},
		{"a prefix stripped of its c's", "carol", FindPatches{ID: cc[2:10], Limit: 500}, cc, 0},
		{"an id that matches as it is wins", "root", FindPatches{ID: cc[2:10], Limit: 500}, ccTwin, 0},
		{"an id sent with its c's", "carol", FindPatches{ID: cc, Limit: 500}, cc, 0},
		{"neither project nor change", "carol", FindPatches{Limit: 500}, "", fault.Usage},
		{"bad state", "carol", FindPatches{Repo: "demo", State: "draft", Limit: 500}, "", fault.Usage},
		{"bad limit", "carol", FindPatches{Repo: "demo", Limit: 0}, "", fault.Usage},
		{"bad id", "carol", FindPatches{ID: "xyz", Limit: 500}, "", fault.Usage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := w.s.FindPatches(w.ctx, as(tc.who), tc.in)
			if tc.kind != 0 {
				if fault.KindOf(err) != tc.kind {
					t.Fatalf("err = %v (kind %v), want kind %v", err, fault.KindOf(err), tc.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, p := range got {
				found = append(found, p.ID)
			}
			if ids(found) != tc.want {
				t.Errorf("found %q, want %q", ids(found), tc.want)
			}
		})
	}
}
