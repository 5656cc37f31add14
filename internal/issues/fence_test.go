package issues

import (
	"database/sql"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/leases"
)

// CloseFenced closes an issue bob holds only for bob (with his live token
// when one is given) or an admin; otherwise the issue stays open, bob's
// tenure goes on and a comment by the merger says why.
func TestCloseFenced(t *testing.T) {
	yes := func() (bool, error) { return true, nil }
	for _, c := range []struct {
		name   string
		closer Closer
		closes bool
	}{
		{"holder", Closer{By: "bob"}, true},
		{"holder with the live token", Closer{By: "bob", Tokens: map[string]int64{"ID": 1}}, true},
		{"holder with a stale token", Closer{By: "bob", Tokens: map[string]int64{"ID": 7}}, false},
		{"someone else", Closer{By: "carol"}, false},
		{"someone else claiming the token", Closer{By: "carol", Tokens: map[string]int64{"ID": 1}}, false},
		{"an admin", Closer{By: "ada", Admin: yes}, true},
		{"an admin with a stale token", Closer{By: "ada", Admin: yes, Tokens: map[string]int64{"ID": 7}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			is := f.file("demo.git", "alice", "x", "")
			err := f.write(func(tx *sql.Tx) error {
				_, err := leases.Acquire(f.ctx, tx, "demo.git", is.ID, "bob", time.Hour, false, t0)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			cl := c.closer
			if tok, ok := cl.Tokens["ID"]; ok {
				cl.Tokens = map[string]int64{is.ID: tok}
			}
			cl.Commit, cl.What = "c0ffee", "the merge of c0ffee"
			var closed bool
			var kept *Kept
			err = f.write(func(tx *sql.Tx) (err error) {
				closed, kept, err = CloseFenced(f.ctx, tx, "demo.git", is.ID, cl, t0.Add(time.Minute))
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			d, err := Get(f.ctx, f.db.R(), "demo.git", is.ID, t0.Add(2*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if c.closes {
				if !closed || kept != nil || d.State != Closed || d.Lease != nil || *d.Tenures[0].EndReason != leases.EndMerged {
					t.Fatalf("closed=%v kept=%+v issue %+v tenures %+v", closed, kept, d.Issue, d.Tenures)
				}
				return
			}
			if closed || kept == nil || kept.Holder != "bob" || d.State != Open || d.Lease == nil || d.Lease.Holder != "bob" || d.Tenures[0].EndReason != nil {
				t.Fatalf("closed=%v kept=%+v issue %+v tenures %+v", closed, kept, d.Issue, d.Tenures)
			}
			if len(d.Comments) != 1 || d.Comments[0].Author != cl.By || d.Comments[0].Body != "Not closed by the merge of c0ffee: "+kept.Why()+"." {
				t.Fatalf("comments %+v", d.Comments)
			}
			if f.events("issue.closed") != 0 || f.events("lease.released") != 0 {
				t.Fatal("a kept issue emitted issue.closed or lease.released")
			}
		})
	}
}
