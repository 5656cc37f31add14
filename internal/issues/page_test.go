package issues

import (
	"database/sql"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
)

func TestCommentPage(t *testing.T) {
	f := newFixture(t)
	is := f.file("r.git", "ann", "Many comments", "")
	other := f.file("r.git", "ann", "Other", "")
	bodies := []string{"a", strings.Repeat("b", 300), "c", strings.Repeat("d", 300), "e"}
	var ids []string
	for _, b := range bodies {
		err := f.write(func(tx *sql.Tx) error {
			c, err := AddComment(f.ctx, tx, "r.git", is.ID, "bob", b, t0)
			ids = append(ids, c.ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.write(func(tx *sql.Tx) error { _, err := AddComment(f.ctx, tx, "r.git", other.ID, "bob", "x", t0); return err }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		after, from   string
		limit, budget int
		want          string // first letters of the bodies
		more          bool
		kind          fault.Kind // of the error, when one is wanted
	}{
		{"all", "", "", 50, 1 << 20, "abcde", false, 0},
		{"by count", "", "", 2, 1 << 20, "ab", true, 0},
		{"by bytes: stops once past the budget", "", "", 50, 100, "ab", true, 0},
		{"one over the budget is still shown", ids[0], "", 50, 10, "b", true, 0},
		{"after", ids[1], "", 50, 1 << 20, "cde", false, 0},
		{"after a prefix", ids[1][:8], "", 50, 1 << 20, "cde", false, 0},
		{"from includes it", "", ids[3], 50, 1 << 20, "de", false, 0},
		{"after the last", ids[4], "", 50, 1 << 20, "", false, 0},
		{"unknown comment", "ffffffff", "", 50, 1 << 20, "", false, fault.NotFound},
		{"not hex", "zz-top", "", 50, 1 << 20, "", false, fault.Usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, more, err := CommentPage(f.ctx, f.db.R(), "r.git", is.ID, tt.after, tt.from, tt.limit, tt.budget)
			if tt.kind != 0 {
				if fault.KindOf(err) != tt.kind {
					t.Fatalf("err %v, want kind %v", err, tt.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, c := range cs {
				got += c.Body[:1]
			}
			if got != tt.want || more != tt.more {
				t.Fatalf("got %q more=%v, want %q more=%v", got, more, tt.want, tt.more)
			}
		})
	}
	n, err := CommentCount(f.ctx, f.db.R(), "r.git", is.ID)
	if err != nil || n != 5 {
		t.Fatalf("CommentCount = %d, %v", n, err)
	}
	counts, err := CommentCounts(f.ctx, f.db.R(), "r.git", []string{is.ID, other.ID, "ffff"})
	if err != nil || counts[is.ID] != 5 || counts[other.ID] != 1 || counts["ffff"] != 0 {
		t.Fatalf("CommentCounts = %v, %v", counts, err)
	}
	if n, err := Count(f.ctx, f.db.R(), "r.git", string(Open)); err != nil || n != 2 {
		t.Fatalf("Count open = %d, %v", n, err)
	}
	// The other issue's comment id does not page this one.
	otherC, _, _ := CommentPage(f.ctx, f.db.R(), "r.git", other.ID, "", "", 5, 100)
	if _, _, err := CommentPage(f.ctx, f.db.R(), "r.git", is.ID, otherC[0].ID, "", 5, 100); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("another issue's comment as cursor: %v", err)
	}
}
