package issues

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/labels"
	"github.com/collab-forge/collab/internal/store"
)

// labelsCol reads an issue's labels with the issue itself, one column of
// labels joined by spaces (a label holds none), through
// issue_labels_by_issue.
const labelsCol = "(SELECT group_concat(label, ' ') FROM issue_labels WHERE seq = i.seq)"

func splitLabels(s string) []string {
	out := strings.Fields(s)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// Labeled is the data of the issue.labeled event: the issue with its new
// set of labels, and what the change added and removed.
type Labeled struct {
	Issue
	Added   []string `json:"added"`
	Removed []string `json:"removed"`
}

// SetLabels makes set (checked and deduplicated by labels.Set) the whole
// set of labels of issue id, for actor: PUT …/issues/ID/labels. See
// EditLabels for what it writes.
func SetLabels(ctx context.Context, tx store.Querier, repo, id string, set []string, actor string, now time.Time) (Labeled, bool, error) {
	next, err := labels.Set(set)
	if err != nil {
		return Labeled{}, false, err
	}
	return relabel(ctx, tx, repo, id, actor, now, func(cur []string) ([]string, error) { return next, nil })
}

// EditLabels adds and removes labels of issue id for actor (`issue label
// --add L --remove L`), by the rules of labels.Edit. An issue whose labels
// change gets the new set, a new updated_at and the event issue.labeled,
// in the caller's transaction; changed is false, and nothing is written,
// when the set stays as it was. Access checks are the caller's: labels
// feed the work queue, so they need write access (CONTRACT.md).
func EditLabels(ctx context.Context, tx store.Querier, repo, id string, add, remove []string, actor string, now time.Time) (Labeled, bool, error) {
	return relabel(ctx, tx, repo, id, actor, now, func(cur []string) ([]string, error) {
		next, _, _, err := labels.Edit(cur, add, remove)
		return next, err
	})
}

func relabel(ctx context.Context, tx store.Querier, repo, id, actor string, now time.Time, change func(cur []string) ([]string, error)) (Labeled, bool, error) {
	is, ok, err := Lookup(ctx, tx, repo, id, now)
	if err != nil {
		return Labeled{}, false, err
	}
	if !ok {
		return Labeled{}, false, fault.New(fault.NotFound, "no issue %s", id)
	}
	next, err := change(is.Labels)
	if err != nil {
		return Labeled{}, false, err
	}
	added, removed := labels.Diff(is.Labels, next)
	if len(added) == 0 && len(removed) == 0 {
		return Labeled{Issue: is, Added: added, Removed: removed}, false, nil
	}
	open := is.State == Open
	for _, l := range added {
		if _, err := tx.ExecContext(ctx, "INSERT INTO issue_labels(repo, label, seq, open) VALUES (?, ?, ?, ?)",
			repo, l, is.seq, open); err != nil {
			return Labeled{}, false, fmt.Errorf("label issue %s %s: %w", id, l, err)
		}
	}
	for _, l := range removed {
		if _, err := tx.ExecContext(ctx, "DELETE FROM issue_labels WHERE repo = ? AND label = ? AND seq = ?",
			repo, l, is.seq); err != nil {
			return Labeled{}, false, fmt.Errorf("unlabel issue %s %s: %w", id, l, err)
		}
	}
	ts := store.FormatTime(now)
	if _, err := tx.ExecContext(ctx, "UPDATE issues SET updated_at = ? WHERE seq = ?", ts, is.seq); err != nil {
		return Labeled{}, false, fmt.Errorf("label issue %s: %w", id, err)
	}
	is.Labels, is.UpdatedAt = next, store.Time(ts)
	ev := Labeled{Issue: is, Added: added, Removed: removed}
	if _, err := events.Emit(ctx, tx, events.IssueLabeled, repo, actor, now, ev); err != nil {
		return Labeled{}, false, err
	}
	return ev, true, nil
}

// CarriesAll is the SQL condition (with its arguments) that the issue
// whose seq is the column seqCol carries every label of ls: one probe of
// the issue_labels key per label. Empty for no label.
func CarriesAll(seqCol string, ls []string) (string, []any) {
	var b strings.Builder
	args := make([]any, 0, len(ls))
	for _, l := range ls {
		b.WriteString(" AND EXISTS (SELECT 1 FROM issue_labels x WHERE x.seq = " + seqCol + " AND x.label = ?)")
		args = append(args, l)
	}
	return b.String(), args
}

// ListLabeled is List of the issues that carry every label of ls (checked
// by labels.Set; none: List itself). It walks the first label's entries
// newest first (issue_labels_open for open issues) and probes the primary
// key for the others, so a page costs the entries it passes, not the
// repository.
func ListLabeled(ctx context.Context, q store.Querier, repo, state string, ls []string, limit int, after string, now time.Time) ([]Issue, error) {
	ls, err := labels.Set(ls)
	if err != nil {
		return nil, err
	}
	if len(ls) == 0 {
		return List(ctx, q, repo, state, limit, after, now)
	}
	state, limit, err = pageOf(state, limit)
	if err != nil {
		return nil, err
	}
	// The literal open = 1 lets the planner use the partial index.
	where := " WHERE i.seq = m.seq AND m.repo = ? AND m.label = ?"
	switch State(state) {
	case Open:
		where += " AND m.open = 1"
	case Closed:
		where += " AND m.open = 0"
	}
	args := []any{store.FormatTime(now), repo, ls[0]}
	cond, largs := CarriesAll("m.seq", ls[1:])
	where += cond
	args = append(args, largs...)
	acond, aargs, err := afterCond(ctx, q, repo, after, "m.seq")
	if err != nil {
		return nil, err
	}
	where += acond
	args = append(append(args, aargs...), limit)
	// CROSS JOIN keeps issue_labels outermost in SQLite: the walk is over
	// the label. (The join's condition is in where: PostgreSQL takes no ON
	// after CROSS JOIN.)
	query := "SELECT " + issueCols + " FROM issue_labels m CROSS JOIN issues i" + liveJoin + where +
		" ORDER BY m.seq DESC LIMIT ?"
	out, err := selectIssues(ctx, q, query, args)
	if err != nil {
		return nil, fmt.Errorf("list issues by label: %w", err)
	}
	return out, nil
}
