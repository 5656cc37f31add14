package leases

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The work queue's pick is one indexed query: on a repository of 100k
// issues (most closed, thousands leased, labels on closed ones too) every
// step of its plan is a SEARCH of an index, never a SCAN of a table nor a
// sort in a temporary b-tree, with no label, one or three.
func TestNextQueryPlanIsIndexedAt100kIssues(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 100k issues")
	}
	const total = 100_000
	f := newFixture(t)
	if f.db.Postgres() {
		t.Skip("reads SQLite's query plan")
	}
	now := t0.Add(time.Hour)
	err := f.db.Write(f.ctx, func(tx *sql.Tx) error {
		ins, err := tx.PrepareContext(f.ctx, `INSERT INTO issues(repo, id, title, state, author, created_at, updated_at)
			VALUES (?, ?, 't', ?, 'x', 'x', 'x')`)
		if err != nil {
			return err
		}
		lab, err := tx.PrepareContext(f.ctx, `INSERT INTO issue_labels(repo, label, seq, open) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		lease, err := tx.PrepareContext(f.ctx, `INSERT INTO leases(repo, issue_id, holder, token, acquired_at, expires_at)
			VALUES (?, ?, 'w', 1, ?, ?)`)
		if err != nil {
			return err
		}
		for n := 1; n <= total; n++ {
			open := n > total*9/10 // the newest tenth is open
			state := "closed"
			if open {
				state = "open"
			}
			id := fmt.Sprintf("%040x", n)
			res, err := ins.ExecContext(f.ctx, repo, id, state)
			if err != nil {
				return err
			}
			seq, _ := res.LastInsertId()
			for _, l := range []struct {
				name string
				on   bool
			}{{"ready", n%2 == 0}, {"area:web", n%3 == 0}, {"prio:high", n%5 == 0}} {
				if l.on {
					if _, err := lab.ExecContext(f.ctx, repo, l.name, seq, open); err != nil {
						return err
					}
				}
			}
			if open && n%4 == 0 {
				if _, err := lease.ExecContext(f.ctx, repo, id, ts(now), ts(now.Add(time.Hour))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, ls := range [][]string{nil, {"ready"}, {"area:web", "prio:high", "ready"}} {
		args := []any{repo, ts(now)}
		for _, l := range ls {
			args = append(args, l)
		}
		rows, err := f.db.R().QueryContext(f.ctx, "EXPLAIN QUERY PLAN "+nextQuery(len(ls)), args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		t.Logf("labels %v:\n  %s", ls, strings.Join(plan, "\n  "))
		want := "USING INDEX issues_by_state"
		if len(ls) > 0 {
			want = "USING COVERING INDEX issue_labels_open"
		}
		if !strings.Contains(strings.Join(plan, "\n"), want) {
			t.Errorf("labels %v: the walk does not use %q", ls, want)
		}
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN") || strings.Contains(step, "TEMP B-TREE") {
				t.Errorf("labels %v: plan step %q", ls, step)
			}
		}
		// And the pick is right: the oldest open, free, labelled issue.
		id, err := Next(f.ctx, f.db.R(), repo, ls, now)
		if err != nil {
			t.Fatal(err)
		}
		want1 := map[int]string{0: fmt.Sprintf("%040x", total*9/10+1), 1: fmt.Sprintf("%040x", total*9/10+2), 3: fmt.Sprintf("%040x", total*9/10+30)}[len(ls)]
		if id != want1 {
			t.Errorf("labels %v: picked %s, want %s", ls, id, want1)
		}
	}
}
