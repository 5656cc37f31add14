package issues

import (
	"database/sql"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/fault"
)

// TestLinks: links are seen from both sides, a pair has one link, and a
// blocks link that would close a cycle of any length is refused.
func TestLinks(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"aaaa", "bbbb", "cccc"} {
		f.insert("demo.git", id, "open")
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	link := func(from, to, kind string) (bool, error) {
		var changed bool
		err := f.write(func(tx *sql.Tx) error {
			var err error
			changed, err = AddLink(f.ctx, tx, "demo.git", from, "demo.git", to, kind, "x", now)
			return err
		})
		return changed, err
	}
	steps := []struct {
		from, to, kind string
		changed        bool
		kindErr        fault.Kind
	}{
		{"aaaa", "bbbb", Blocks, true, 0},
		{"aaaa", "bbbb", Blocks, false, 0},
		{"bbbb", "cccc", Blocks, true, 0},
		{"cccc", "aaaa", Blocks, false, fault.Conflict}, // a → b → c → a
		{"bbbb", "aaaa", Blocks, false, fault.Conflict},
		{"cccc", "aaaa", Relates, true, 0}, // relates makes no cycle
		{"aaaa", "aaaa", Relates, false, fault.Usage},
		{"bbbb", "aaaa", Relates, true, 0}, // replaces a blocks b
	}
	for i, s := range steps {
		changed, err := link(s.from, s.to, s.kind)
		if s.kindErr != 0 {
			if fault.KindOf(err) != s.kindErr {
				t.Errorf("step %d: %s %s %s: %v, want kind %v", i, s.from, s.kind, s.to, err, s.kindErr)
			}
			continue
		}
		if err != nil || changed != s.changed {
			t.Errorf("step %d: %s %s %s: changed %v, %v; want changed %v", i, s.from, s.kind, s.to, changed, err, s.changed)
		}
	}
	ls, err := Links(f.ctx, f.db.R(), "demo.git", "bbbb")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range ls {
		got[l.ID] = l.Kind
	}
	if len(ls) != 2 || got["aaaa"] != Relates || got["cccc"] != Blocks {
		t.Errorf("links of bbbb: %+v", ls)
	}
	ls, _ = Links(f.ctx, f.db.R(), "demo.git", "cccc")
	if len(ls) != 2 || ls[1].Kind != BlockedBy || ls[1].ID != "bbbb" || ls[0].Kind != Relates {
		t.Errorf("links of cccc: %+v", ls)
	}
	var removed bool
	if err := f.write(func(tx *sql.Tx) error {
		removed, err = RemoveLink(f.ctx, tx, "demo.git", "aaaa", "demo.git", "bbbb", "x", now)
		return err
	}); err != nil || !removed {
		t.Errorf("remove from the other side: %v, %v", removed, err)
	}
}
