package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// recordTables are the record's tables in an order that inserts every
// row after the rows it refers to. CopyRecord refuses a record with a
// table not named here: a migration that adds one must add it here too.
var recordTables = []string{
	"settings", "repos", "principals", "keys", "grants",
	"issues", "comments", "xrefs", "leases", "tenures", "issue_labels", "issue_links",
	"patches", "revisions", "patch_issues", "reviews", "patch_events", "checks",
	"patch_reviewers", "patch_hashtags", "branch_scans", "branch_rules",
	"events", "webhooks", "deliveries", "delivery_attempts",
	"tokens", "sessions", "rate_buckets",
}

// identities are the PostgreSQL identity columns a copy gives values to:
// their sequences must go on from the largest.
var identities = map[string]string{
	"issues": "seq", "comments": "seq", "patches": "seq", "reviews": "seq", "patch_events": "seq",
	"webhooks": "id", "deliveries": "id", "delivery_attempts": "id", "tokens": "id",
}

// CopyRecord copies every row of the SQLite record from into the empty
// PostgreSQL record to, in one transaction of to's, and returns how many
// rows each table holds in both afterwards. from must not change meanwhile
// (the caller holds its writer lock: Exclusive). Rows are copied in
// SQLite's rowid order, so that to's rowid columns keep the order the SQL
// reads them in.
func CopyRecord(ctx context.Context, from, to *DB) (map[string]int, error) {
	if from.pg || !to.pg {
		return nil, fmt.Errorf("copy the record: from must be SQLite, to PostgreSQL")
	}
	var have []string
	if err := Each(ctx, from.r, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'issues_fts%' ORDER BY name`, nil, func(rows *sql.Rows) error {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		have = append(have, n)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list the tables: %w", err)
	}
	for _, t := range have {
		if !slices.Contains(recordTables, t) {
			return nil, fmt.Errorf("copy the record: table %s is not known to the copy", t)
		}
	}
	counts := map[string]int{}
	err := to.Write(ctx, func(tx Tx) error {
		for _, t := range recordTables {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
				return fmt.Errorf("count %s: %w", t, err)
			}
			if n > 0 {
				return fmt.Errorf("%w: table %s holds %d rows", ErrNotEmpty, t, n)
			}
		}
		for _, t := range recordTables {
			n, err := copyTable(ctx, from, tx, t)
			if err != nil {
				return fmt.Errorf("copy %s: %w", t, err)
			}
			counts[t] = n
			if col, ok := identities[t]; ok && n > 0 {
				if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT setval(pg_get_serial_sequence('%s', '%s'), (SELECT max(%s) FROM %s))", t, col, col, t)); err != nil {
					return fmt.Errorf("go on from %s.%s: %w", t, col, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, t := range recordTables {
		var a, b int
		if err := from.r.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&a); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		if err := to.r.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&b); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		if a != b || a != counts[t] {
			return nil, fmt.Errorf("copy the record: %s holds %d rows in SQLite and %d in PostgreSQL", t, a, b)
		}
	}
	return counts, nil
}

// ErrNotEmpty is CopyRecord's refusal of a target that holds rows.
var ErrNotEmpty = errors.New("the PostgreSQL record is not empty")

// copyTable inserts every row of table t of from through tx.
func copyTable(ctx context.Context, from *DB, tx Tx, t string) (int, error) {
	order := "rowid"
	if t == "issue_labels" { // WITHOUT ROWID
		order = "repo, label, seq"
	}
	rows, err := from.r.QueryContext(ctx, "SELECT * FROM "+t+" ORDER BY "+order)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ")
	ins, err := tx.PrepareContext(ctx, "INSERT INTO "+t+"("+strings.Join(cols, ", ")+") VALUES ("+marks+")")
	if err != nil {
		return 0, err
	}
	defer ins.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		if _, err := ins.ExecContext(ctx, vals...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// FreezeRecord makes every later write of the SQLite record fail, inside
// tx (the write that moved it): a process that opened the record before it
// moved, and waited for the writer lock meanwhile, is refused rather than
// writing where nobody reads.
func FreezeRecord(ctx context.Context, tx Tx) error {
	for _, t := range recordTables {
		for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(`CREATE TRIGGER moved_%s_%s BEFORE %s ON %s
				BEGIN SELECT RAISE(ABORT, 'the forge record moved to PostgreSQL: try again'); END`, strings.ToLower(op), t, op, t)); err != nil {
				return fmt.Errorf("freeze %s: %w", t, err)
			}
		}
	}
	return nil
}
