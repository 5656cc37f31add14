package events

import (
	"context"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/store"
)

func TestEmitAndList(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for _, repo := range []string{"a.git", "b.git", "a.git", "c.git", "a.git"} {
		if _, err := Emit(ctx, db.R(), IssueFiled, repo, "ann", now, map[string]string{"repo": repo}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		after int64
		repos []string
		limit int
		want  []int64
	}{
		{0, []string{"a.git"}, 10, []int64{1, 3, 5}},
		{1, []string{"a.git", "c.git"}, 10, []int64{3, 4, 5}},
		{0, []string{"a.git", "b.git"}, 2, []int64{1, 2}},
		{0, nil, 10, nil},
	} {
		got, err := List(ctx, db.R(), tc.after, tc.repos, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("List(%d, %v, %d) = %d events, want %v", tc.after, tc.repos, tc.limit, len(got), tc.want)
		}
		for i, e := range got {
			if e.ID != tc.want[i] || e.Event != IssueFiled || e.At != "2026-11-29T09:00:00.000Z" || string(e.Data) != `{"repo":"`+e.Repo+`"}` {
				t.Errorf("List(%d, %v)[%d] = %+v", tc.after, tc.repos, i, e)
			}
		}
	}
}
