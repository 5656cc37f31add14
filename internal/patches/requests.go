package patches

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/store"
)

// What a push asks of a patch beyond its commits, in Gerrit's words: the
// principals asked to review it (r=, cc=), its hashtags (hashtag=, t=) and
// a message per revision (m=). A push adds reviewers and hashtags; none
// removes them.

// AddReviewers records names (principal names the caller checked) as asked
// to review the patch, inside tx; names already asked are left as they
// were. It returns the names that are new.
func AddReviewers(ctx context.Context, tx store.Querier, repo, id string, names []string, by string, now time.Time) ([]string, error) {
	return addNamed(ctx, tx, "reviewer", `INSERT INTO patch_reviewers(repo, patch_id, name, added_by, added_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		repo, id, names, by, store.FormatTime(now))
}

// AddHashtags records tags on the patch, inside tx, and returns those
// that are new.
func AddHashtags(ctx context.Context, tx store.Querier, repo, id string, tags []string) ([]string, error) {
	return addNamed(ctx, tx, "hashtag", `INSERT INTO patch_hashtags(repo, patch_id, tag) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, repo, id, tags)
}

func addNamed(ctx context.Context, tx store.Querier, what, stmt, repo, id string, names []string, extra ...any) ([]string, error) {
	var added []string
	for _, n := range names {
		res, err := tx.ExecContext(ctx, stmt, append([]any{repo, id, n}, extra...)...)
		if err != nil {
			return nil, fmt.Errorf("add %s %s to patch %s: %w", what, n, id, err)
		}
		if k, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("add %s %s to patch %s: %w", what, n, id, err)
		} else if k > 0 {
			added = append(added, n)
		}
	}
	return added, nil
}

// SetRevisionMessage records the message a push gave revision number of a
// patch (Gerrit's m=), inside tx, replacing an earlier one.
func SetRevisionMessage(ctx context.Context, tx store.Querier, repo, id string, number int, msg string) error {
	if _, err := tx.ExecContext(ctx, "UPDATE revisions SET message = ? WHERE repo = ? AND patch_id = ? AND number = ?",
		msg, repo, id, number); err != nil {
		return fmt.Errorf("set the message of revision %d of %s: %w", number, id, err)
	}
	return nil
}

// fillRequests reads the reviewers and hashtags of ps (patches of repo),
// one query each whatever their number. (A revision's message is read
// with the revision.)
func fillRequests(ctx context.Context, q store.Querier, repo string, ps []*Patch) error {
	if len(ps) == 0 {
		return nil
	}
	byID := make(map[string]*Patch, len(ps))
	args := []any{repo}
	in := ""
	for i, p := range ps {
		byID[p.ID] = p
		p.Reviewers, p.Hashtags = []string{}, []string{}
		if i > 0 {
			in += ","
		}
		in += "?"
		args = append(args, p.ID)
	}
	where := " WHERE repo = ? AND patch_id IN (" + in + ")"
	for _, r := range []struct {
		what, query string
		into        func(*Patch) *[]string
	}{
		{"reviewers", "SELECT patch_id, name FROM patch_reviewers" + where + " ORDER BY patch_id, name", func(p *Patch) *[]string { return &p.Reviewers }},
		{"hashtags", "SELECT patch_id, tag FROM patch_hashtags" + where + " ORDER BY patch_id, tag", func(p *Patch) *[]string { return &p.Hashtags }},
	} {
		err := store.Each(ctx, q, r.query, args, func(rows *sql.Rows) error {
			var id, v string
			if err := rows.Scan(&id, &v); err != nil {
				return err
			}
			if p := byID[id]; p != nil {
				l := r.into(p)
				*l = append(*l, v)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("read patch %s: %w", r.what, err)
		}
	}
	return nil
}

// RemoveReviewers takes names off the patch's reviewers, inside tx, and
// returns those that were on it.
func RemoveReviewers(ctx context.Context, tx store.Querier, repo, id string, names []string) ([]string, error) {
	var removed []string
	for _, n := range names {
		res, err := tx.ExecContext(ctx, "DELETE FROM patch_reviewers WHERE repo = ? AND patch_id = ? AND name = ?", repo, id, n)
		if err != nil {
			return nil, fmt.Errorf("remove reviewer %s from patch %s: %w", n, id, err)
		}
		if k, err := res.RowsAffected(); err != nil {
			return nil, fmt.Errorf("remove reviewer %s from patch %s: %w", n, id, err)
		} else if k > 0 {
			removed = append(removed, n)
		}
	}
	return removed, nil
}
