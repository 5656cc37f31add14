package patches

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

func open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := strings.Repeat("ab", 20)
	c1, c2 := strings.Repeat("1", 40), strings.Repeat("2", 40)
	err := db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := Create(ctx, tx, New{Repo: "demo.git", ID: id, Title: "t", Author: "ada", Base: "main"}, now); err != nil {
			return err
		}
		for i, c := range []string{c1, c2, c1} {
			r, added, err := AddRevision(ctx, tx, "demo.git", id, c, "b", "ada", now)
			if err != nil {
				return err
			}
			want := []int{1, 2, 1}[i]
			if r.Number != want || added != (i < 2) {
				t.Errorf("push %d: revision %d added=%v, want %d", i, r.Number, added, want)
			}
		}
		_, err := LinkIssue(ctx, tx, "demo.git", id, "cafecafe")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(ctx, db.R(), "demo.git", "abab")
	if err != nil || got != id {
		t.Fatalf("Resolve = %q, %v", got, err)
	}
	if _, err := Resolve(ctx, db.R(), "demo.git", "cdcd"); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("Resolve missing: %v", err)
	}
	bases, err := OpenBases(ctx, db.R(), "demo.git")
	if err != nil || !bases["main"] || len(bases) != 1 {
		t.Fatalf("OpenBases = %v, %v", bases, err)
	}
	var merged bool
	for range 2 {
		err = db.Write(ctx, func(tx *sql.Tx) error {
			merged, err = RecordMerge(ctx, tx, "demo.git", id, "main", c2, "bob", now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if merged {
		t.Error("second RecordMerge reported a merge")
	}
	p, err := Get(ctx, db.R(), "demo.git", id)
	if err != nil {
		t.Fatal(err)
	}
	if p.State != Merged || p.Merge == nil || p.Merge.Commit != c2 || p.Merge.By != "bob" || len(p.Revisions) != 2 || len(p.Issues) != 1 {
		t.Errorf("Get = %+v", p)
	}
	for _, tc := range []struct {
		state string
		n     int
	}{{"open", 0}, {"merged", 1}, {"all", 1}, {"", 0}} {
		ps, err := List(ctx, db.R(), "demo.git", tc.state, 0, "")
		if err != nil || len(ps) != tc.n {
			t.Errorf("List(%q) = %d patches, %v; want %d", tc.state, len(ps), err, tc.n)
		}
	}
	if _, err := List(ctx, db.R(), "demo.git", "bogus", 0, ""); fault.KindOf(err) != fault.Usage {
		t.Errorf("List(bogus) = %v", err)
	}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		_, err := SetState(ctx, tx, "demo.git", id, Closed, "ada", now)
		return err
	})
	if fault.KindOf(err) != fault.Conflict {
		t.Errorf("closing a merged patch: %v", err)
	}
	var n int
	db.R().QueryRow("SELECT count(*) FROM events").Scan(&n)
	if n != 4 { // created, 2 revisions, 1 merge
		t.Errorf("%d events, want 4", n)
	}
}

// List loads the revisions and issues of a whole page at once: each patch
// must get its own, in order, and a patch beyond the page none.
func TestListCarriesRevisionsAndIssues(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	err := db.Write(ctx, func(tx *sql.Tx) error {
		for i, id := range []string{a, b, c} {
			if _, err := Create(ctx, tx, New{Repo: "demo.git", ID: id, Title: "t", Author: "ada", Base: "main"}, now); err != nil {
				return err
			}
			for r := 0; r <= i; r++ {
				if _, _, err := AddRevision(ctx, tx, "demo.git", id, strings.Repeat(string(rune('1'+3*i+r)), 40), "b", "ada", now); err != nil {
					return err
				}
			}
			for _, iss := range []string{"dddd0000", "cccc0000"}[:i] {
				if _, err := LinkIssue(ctx, tx, "demo.git", id, iss); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := List(ctx, db.R(), "demo.git", "open", 2, "")
	if err != nil || len(ps) != 2 || ps[0].ID != c || ps[1].ID != b {
		t.Fatalf("List = %+v, %v", ps, err)
	}
	for _, p := range ps {
		want, err := Get(ctx, db.R(), "demo.git", p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(p.Revisions) != fmt.Sprint(want.Revisions) || fmt.Sprint(p.Issues) != fmt.Sprint(want.Issues) {
			t.Errorf("List's %s: revisions %v issues %v; Get: %v %v", p.ID, p.Revisions, p.Issues, want.Revisions, want.Issues)
		}
	}
	if len(ps[0].Revisions) != 3 || ps[0].Issues[0] != "cccc0000" || len(ps[1].Revisions) != 2 || len(ps[1].Issues) != 1 {
		t.Errorf("List = %+v", ps)
	}
	ps, err = List(ctx, db.R(), "demo.git", "open", 2, b)
	if err != nil || len(ps) != 1 || ps[0].ID != a || len(ps[0].Revisions) != 1 || len(ps[0].Issues) != 0 {
		t.Errorf("List after %s = %+v, %v", b, ps, err)
	}
}

// AddRevisionOf, given the revisions just read, answers as AddRevision
// does: the same numbers, the same added flags, the same rows.
func TestAddRevisionOfAgrees(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := func(d string) string { return strings.Repeat(d, 40) }
	// How the revisions are read first: not at all (AddRevision), all of
	// them, or only those AddRevisionOf needs.
	read := map[string]func(tx *sql.Tx, id, commit string) ([]Revision, error){
		"Revisions": func(tx *sql.Tx, id, _ string) ([]Revision, error) { return Revisions(ctx, tx, "demo.git", id) },
		"RevisionsFor": func(tx *sql.Tx, id, commit string) ([]Revision, error) {
			return RevisionsFor(ctx, tx, "demo.git", id, commit)
		},
	}
	for _, pushes := range [][]string{
		{c("1")},
		{c("1"), c("1")},
		{c("1"), c("2"), c("1"), c("3"), c("2")},
		{c("1"), c("2"), c("3"), c("3"), c("4"), c("2"), c("4")},
	} {
		db := open(t)
		rows := map[string]string{}
		for i, mode := range []string{"AddRevision", "Revisions", "RevisionsFor"} {
			id := strings.Repeat(string(rune('a'+i)), 40)
			var got []string
			err := db.Write(ctx, func(tx *sql.Tx) error {
				if _, err := Create(ctx, tx, New{Repo: "demo.git", ID: id, Title: "t", Author: "ada", Base: "main"}, now); err != nil {
					return err
				}
				for _, commit := range pushes {
					var r Revision
					var added bool
					var err error
					if read[mode] != nil {
						revs, rerr := read[mode](tx, id, commit)
						if rerr != nil {
							return rerr
						}
						r, added, err = AddRevisionOf(ctx, tx, "demo.git", id, revs, Revision{Commit: commit, BaseCommit: "b", Pusher: "ada"}, now)
					} else {
						r, added, err = AddRevision(ctx, tx, "demo.git", id, commit, "b", "ada", now)
					}
					if err != nil {
						return err
					}
					got = append(got, fmt.Sprintf("%d:%v", r.Number, added))
				}
				revs, err := Revisions(ctx, tx, "demo.git", id)
				rows[mode] = fmt.Sprint(revs) + " " + strings.Join(got, ",")
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []string{"Revisions", "RevisionsFor"} {
			if rows[mode] != rows["AddRevision"] {
				t.Errorf("pushes %d: AddRevision %s; AddRevisionOf after %s %s", len(pushes), rows["AddRevision"], mode, rows[mode])
			}
		}
	}
}
