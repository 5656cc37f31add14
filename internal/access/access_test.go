package access

import (
	"context"
	"testing"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

func TestOf(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		"INSERT INTO repos(name, public, created_at) VALUES ('pub.git', 1, 't'), ('priv.git', 0, 't'), ('org/x.git', 0, 't')",
		"INSERT INTO principals(name, disabled, created_at) VALUES ('ann', 0, 't'), ('bob', 0, 't'), ('cat', 0, 't'), ('old', 1, 't')",
		"INSERT INTO grants(principal, repo, level) VALUES ('ann', 'priv.git', 'write'), ('bob', '*', 'read'), ('cat', '*', 'read'), ('cat', 'org/x.git', 'admin'), ('old', '*', 'admin')",
	} {
		if _, err := db.R().Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		who, repo string
		want      Level
	}{
		{"ann", "priv.git", Write},
		{"ann", "pub.git", Read},
		{"ann", "org/x.git", None},
		{"bob", "priv.git", Read},
		{"cat", "org/x.git", Admin},
		{"cat", "priv.git", Read},
		{"old", "pub.git", None},
		{"ghost", "pub.git", None},
		{Anonymous, "pub.git", Read},
		{Anonymous, "priv.git", None},
		{Local, "priv.git", Admin},
		{"ann", "missing.git", None},
	} {
		got, err := Of(ctx, db.R(), tc.who, tc.repo)
		if err != nil || got != tc.want {
			t.Errorf("Of(%q, %q) = %v, %v; want %v", tc.who, tc.repo, got, err, tc.want)
		}
		ls, err := Levels(ctx, db.R(), tc.who)
		if err != nil || ls[tc.repo] != tc.want {
			t.Errorf("Levels(%q)[%q] = %v, %v; want %v", tc.who, tc.repo, ls[tc.repo], err, tc.want)
		}
	}
	// Unreadable and missing are one and the same refusal.
	_, e1 := Require(ctx, db.R(), "ann", "org/x.git", Read)
	_, e2 := Require(ctx, db.R(), "ann", "nope.git", Read)
	if fault.KindOf(e1) != fault.NotFound || fault.KindOf(e2) != fault.NotFound {
		t.Errorf("Require on unreadable/missing = %v / %v", e1, e2)
	}
	if _, err := Require(ctx, db.R(), "bob", "priv.git", Write); fault.KindOf(err) != fault.Denied {
		t.Errorf("reader writing = %v, want Denied", err)
	}
}
