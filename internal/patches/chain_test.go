package patches

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestListRelationsAgreeWithGet: a page's parents and children, read in
// two queries, are Get's, read patch by patch; a later revision that
// leaves the stack takes its relations with it.
func TestListRelationsAgreeWithGet(t *testing.T) {
	ctx := context.Background()
	db := open(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	err := db.Write(ctx, func(tx *sql.Tx) error {
		parent := ""
		for i, id := range []string{a, b, c} {
			if _, err := Create(ctx, tx, New{Repo: "demo.git", ID: id, Title: "t" + id[:1], Author: "ada", Base: "main"}, now); err != nil {
				return err
			}
			commit := strings.Repeat(string(rune('1'+i)), 40)
			if _, _, err := AddRevisionOf(ctx, tx, "demo.git", id, nil, Revision{Commit: commit, BaseCommit: "b", Pusher: "ada", Parent: parent}, now); err != nil {
				return err
			}
			parent = id
		}
		// c's second revision sits on the branch: it leaves b's children.
		revs, err := Revisions(ctx, tx, "demo.git", c)
		if err != nil {
			return err
		}
		_, _, err = AddRevisionOf(ctx, tx, "demo.git", c, revs, Revision{Commit: strings.Repeat("9", 40), BaseCommit: "b", Pusher: "ada"}, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := List(ctx, db.R(), "demo.git", "all", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list {
		g, err := Get(ctx, db.R(), "demo.git", p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Parents, g.Parents) || !reflect.DeepEqual(p.Children, g.Children) {
			t.Errorf("%s: list %+v / %+v, get %+v / %+v", p.ID[:1], p.Parents, p.Children, g.Parents, g.Children)
		}
	}
	g, _ := Get(ctx, db.R(), "demo.git", b)
	if len(g.Parents) != 1 || g.Parents[0].ID != a || len(g.Children) != 0 {
		t.Errorf("b: parents %+v children %+v, want a and none", g.Parents, g.Children)
	}
}
