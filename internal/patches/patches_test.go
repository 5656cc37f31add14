package patches

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

func open(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "collab.db"))
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
