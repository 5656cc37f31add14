package export

import (
	"bytes"
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/store"
)

// TestImportRoundTrip: a forge of 1,000 issues and 100 patches, exported,
// imported into another forge and exported there, gives the same record
// file for file, field for field; importing again writes nothing; an
// import that fails part-way (an id taken) writes nothing, and the rerun
// completes it.
func TestImportRoundTrip(t *testing.T) {
	f := newFixture(t)
	w := &want{issues: map[string]Issue{}, comments: map[string][]Comment{}, tenures: map[string][]Tenure{},
		patches: map[string]Patch{}, revs: map[string][]Revision{}, reviews: map[string][]Review{},
		states: map[string][]StateChange{}}
	var issueIDs []string
	for n := 0; n < 1000; n++ {
		state := "open"
		if n%3 == 0 {
			state = "closed"
		}
		id := f.addIssue(w, 10000+n, state)
		issueIDs = append(issueIDs, id)
		if n%2 == 0 {
			f.addComment(w, id, 10000+2*n)
			f.addComment(w, id, 10000+2*n+1)
		}
		if n%5 == 0 {
			f.addTenure(w, id, 1, true)
			f.addTenure(w, id, 2, n%10 == 0)
		}
		if n%7 == 0 {
			f.addLabels(w, id, "bug", "ready")
		}
	}
	for n := 0; n < 100; n++ {
		fixes := ""
		if n%2 == 0 {
			fixes = issueIDs[n]
		}
		f.addPatch(w, 20000+n, fixes, n%4 == 0)
	}
	// Some were written by a bot for someone (ops.Actor.OnBehalfOf).
	f.exec(`UPDATE issues SET on_behalf_of = 'carol', via = 'DM' WHERE seq % 4 = 0`)
	f.exec(`UPDATE comments SET on_behalf_of = 'carol' WHERE seq % 3 = 0`)
	f.exec(`UPDATE reviews SET on_behalf_of = 'dan', via = 'chat' WHERE seq % 5 = 0`)
	if _, err := f.x.Export(f.ctx, repoKey, f.git, testNow); err != nil {
		t.Fatal(err)
	}

	root := forge.Root{Dir: filepath.Join(t.TempDir(), "b")}
	if err := forge.Init(f.ctx, root, nil); err != nil {
		t.Fatal(err)
	}
	db, err := root.Open(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	im := &Importer{Root: root, DB: db, Now: func() time.Time { return testNow }}
	in := Import{Repo: repoKey, From: f.git, Keys: []ed25519.PublicKey{f.key.Public().(ed25519.PublicKey)}, Binary: "/bin/true"}

	// A review id taken here, in another repository: the import fails
	// after the repository was made and most rows were inserted.
	last := hexID(3100 + 20099)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.R().ExecContext(f.ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO patches(repo, id, title, author, base, created_at, updated_at) VALUES ('other.git', 'p', 't', 'x', 'main', 'x', 'x')`)
	exec(`INSERT INTO reviews(repo, patch_id, id, revision, author, verdict, body, created_at) VALUES ('other.git', 'p', ?, 1, 'x', 'comment', '', 'x')`, last)
	if _, err := im.Import(f.ctx, in); fault.KindOf(err) != fault.Conflict {
		t.Fatalf("import with an id taken: %v, want a conflict", err)
	}
	for _, table := range []string{"issues", "comments", "tenures", "patches", "revisions"} {
		var n int
		if err := db.R().QueryRowContext(f.ctx, "SELECT count(*) FROM "+table+" WHERE repo = ?", repoKey).Scan(&n); err != nil || n != 0 {
			t.Fatalf("after a failed import %s holds %d rows (%v), want none", table, n, err)
		}
	}
	exec(`DELETE FROM reviews WHERE repo = 'other.git'`)
	exec(`DELETE FROM patches WHERE repo = 'other.git'`)

	res, err := im.Import(f.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	// The failed run made the repository; this one finds it.
	if res.Issues != 1000 || res.Patches != 100 || res.Created || res.Unchanged != 0 || len(res.Principals) != 5 {
		t.Errorf("import: %+v", res)
	}
	compareRecords(t, f.db, db)

	again, err := im.Import(f.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if again.Issues != 0 || again.Patches != 0 || again.Unchanged != 1100 {
		t.Errorf("import again: %+v", again)
	}
	compareRecords(t, f.db, db)
}

// compareRecords checks that both databases give repoKey the same
// export, file by file.
func compareRecords(t *testing.T, a, b *store.DB) {
	t.Helper()
	ra, _, err := load(t.Context(), a, repoKey, testNow)
	if err != nil {
		t.Fatal(err)
	}
	rb, _, err := load(t.Context(), b, repoKey, testNow)
	if err != nil {
		t.Fatal(err)
	}
	files := func(rs []*record) map[string][]byte {
		m := map[string][]byte{}
		for _, r := range rs {
			for _, f := range r.files {
				m[r.ref+":"+f.path] = f.data
			}
		}
		return m
	}
	fa, fb := files(ra), files(rb)
	if len(fa) != len(fb) {
		t.Errorf("%d files exported there, %d here", len(fa), len(fb))
	}
	bad := 0
	for p, d := range fa {
		if !bytes.Equal(d, fb[p]) && bad < 3 {
			bad++
			t.Errorf("%s differs:\n%s\nimported:\n%s", p, d, fb[p])
		}
	}
}
