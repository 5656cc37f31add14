package issues

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

// PageBytes bounds the comment bodies of one page of an issue that issue
// show and the API's GET of an issue answer with: past it the page stops,
// and the reader asks for the next.
const PageBytes = 4 << 20

// Shown is an issue with one page of its comments: what issue show and
// the API's GET of an issue answer.
type Shown struct {
	Detail
	// CommentsNext is the comment the next page starts after, nil when
	// the page is the last.
	CommentsNext *string `json:"comments_next"`
}

// GetPage is Get with one page of the comments (CommentPage, bounded by
// limit and PageBytes), so that a long issue costs one bounded page per
// request; q should be one read transaction, so that head and page agree.
func GetPage(ctx context.Context, q store.Querier, repo, id string, now time.Time, after string, limit int) (Shown, error) {
	d, err := GetHead(ctx, q, repo, id, now)
	if err != nil {
		return Shown{}, err
	}
	cs, more, err := CommentPage(ctx, q, repo, id, after, "", limit, PageBytes)
	if err != nil {
		return Shown{}, err
	}
	d.Comments = cs
	out := Shown{Detail: d}
	if more && len(cs) > 0 {
		next := cs[len(cs)-1].ID
		out.CommentsNext = &next
	}
	return out, nil
}

// CommentPage returns a page of the comments of issue id, oldest first:
// those after the comment after ("" from the first; from instead starts
// at and includes comment from), at most limit of them and stopping once
// their bodies pass maxBytes (one comment is always shown, however long).
// more says whether others follow. Rows are read one at a time, so a page
// of one 1 MiB comment never reads the next one.
func CommentPage(ctx context.Context, q store.Querier, repo, id, after, from string, limit, maxBytes int) (cs []Comment, more bool, err error) {
	where := "repo = ? AND issue_id = ?"
	args := []any{repo, id}
	for _, c := range []struct{ id, op string }{{after, ">"}, {from, ">="}} {
		if c.id == "" {
			continue
		}
		seq, err := commentSeq(ctx, q, repo, id, c.id)
		if err != nil {
			return nil, false, err
		}
		where += " AND seq " + c.op + " ?"
		args = append(args, seq)
	}
	rows, err := q.QueryContext(ctx, "SELECT "+commentCols+" FROM comments WHERE "+where+" ORDER BY seq LIMIT ?",
		append(args, limit+1)...)
	if err != nil {
		return nil, false, fmt.Errorf("read comments of %s: %w", id, err)
	}
	defer rows.Close()
	cs = []Comment{}
	size := 0
	for rows.Next() {
		if len(cs) == limit || (len(cs) > 0 && size >= maxBytes) {
			return cs, true, nil
		}
		c := Comment{Repo: repo, IssueID: id}
		if err := scanComment(rows, &c); err != nil {
			return nil, false, fmt.Errorf("read comments of %s: %w", id, err)
		}
		cs = append(cs, c)
		size += len(c.Body)
	}
	return cs, false, rows.Err()
}

// commentSeq is the position of comment cid (a full id or a prefix of 4 or
// more) among the comments of issue id.
func commentSeq(ctx context.Context, q store.Querier, repo, id, cid string) (int64, error) {
	if len(cid) < 4 || strings.Trim(strings.ToLower(cid), "0123456789abcdef") != "" {
		return 0, fault.New(fault.Usage, "bad comment id %q: want 4 or more hex digits", clipID(cid))
	}
	var seq int64
	var found string
	cid = strings.ToLower(cid)
	err := q.QueryRowContext(ctx, `SELECT seq, id FROM comments WHERE repo = ? AND issue_id = ? AND id >= ? ORDER BY id LIMIT 1`,
		repo, id, cid).Scan(&seq, &found)
	if err == sql.ErrNoRows || (err == nil && !strings.HasPrefix(found, cid)) {
		return 0, fault.New(fault.NotFound, "no comment %s on issue %s", clipID(cid), id)
	}
	if err != nil {
		return 0, fmt.Errorf("find comment %s: %w", cid, err)
	}
	return seq, nil
}

func clipID(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// CommentCount is how many comments issue id has.
func CommentCount(ctx context.Context, q store.Querier, repo, id string) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM comments WHERE repo = ? AND issue_id = ?", repo, id).Scan(&n); err != nil {
		return 0, fmt.Errorf("count comments of %s: %w", id, err)
	}
	return n, nil
}

// CommentCounts is CommentCount for each of ids, in one query.
func CommentCounts(ctx context.Context, q store.Querier, repo string, ids []string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{repo}
	for _, id := range ids {
		args = append(args, id)
	}
	err := store.Each(ctx, q, "SELECT issue_id, count(*) FROM comments WHERE repo = ? AND issue_id IN (?"+strings.Repeat(", ?", len(ids)-1)+") GROUP BY issue_id", args,
		func(rows *sql.Rows) error {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				return err
			}
			out[id] = n
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("count comments: %w", err)
	}
	return out, nil
}

// Count is how many issues of repo are in state (open, closed or all).
func Count(ctx context.Context, q store.Querier, repo, state string) (int, error) {
	if err := CheckState(state); err != nil {
		return 0, err
	}
	query, args := "SELECT count(*) FROM issues WHERE repo = ?", []any{repo}
	if state != "all" {
		query, args = query+" AND state = ?", append(args, state)
	}
	var n int
	if err := q.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count issues: %w", err)
	}
	return n, nil
}
