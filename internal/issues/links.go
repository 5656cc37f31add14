package issues

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// The kinds of an explicit link between issues (issue link --kind): A
// blocks B says B waits for A (the work queue skips B while A is open).
const (
	Relates = "relates"
	Blocks  = "blocks"
	// BlockedBy is Blocks seen from the issue it blocks.
	BlockedBy = "blocked-by"
)

// FieldKind names issue link's --kind in refusals.
const FieldKind = "kind"

// Link is an explicit link as one of its two issues shows it: the other
// issue (Repo, ID, its Title and State) and the link's Kind from this
// side (relates, blocks, blocked-by).
type Link struct {
	Repo  string `json:"repo"`
	ID    string `json:"id"`
	Kind  string `json:"kind"`
	Title string `json:"title"`
	State State  `json:"state"`
}

// String names the link from its issue's side: "blocks other#1234abcd".
func (l Link) String() string {
	return l.Kind + " " + reponame.Display(l.Repo) + "#" + l.ID[:min(8, len(l.ID))]
}

// CheckLinkKind refuses a kind that is not relates or blocks ("" is
// relates).
func CheckLinkKind(kind string) (string, error) {
	switch kind {
	case "":
		return Relates, nil
	case Relates, Blocks:
		return kind, nil
	}
	return "", fault.NewField(fault.Usage, FieldKind, "bad %s %q: want relates or blocks", fault.Field(FieldKind), text.Clip(kind))
}

// AddLink links issue id of repo to issue dstID of dstRepo (both exist)
// with kind, replacing a link the pair had in either direction, and
// emits issue.edited on the first. It refuses a link of an issue to
// itself, and a blocks link that closes a cycle (dst already blocks id,
// through any chain). changed is false when the link was there already.
func AddLink(ctx context.Context, tx store.Querier, repo, id, dstRepo, dstID, kind, by string, now time.Time) (changed bool, err error) {
	if repo == dstRepo && id == dstID {
		return false, fault.New(fault.Usage, "an issue cannot be linked to itself")
	}
	var have string
	err = tx.QueryRowContext(ctx, `SELECT kind FROM issue_links WHERE repo = ? AND issue_id = ? AND dst_repo = ? AND dst_id = ?`,
		repo, id, dstRepo, dstID).Scan(&have)
	if err == nil && have == kind {
		return false, nil
	}
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("read the link of %s: %w", id, err)
	}
	if kind == Blocks {
		var cycle bool
		err := tx.QueryRowContext(ctx, `WITH RECURSIVE after(repo, id) AS (
				SELECT ?1, ?2
				UNION SELECT k.dst_repo, k.dst_id FROM issue_links k JOIN after a ON k.repo = a.repo AND k.issue_id = a.id WHERE k.kind = 'blocks')
			SELECT EXISTS (SELECT 1 FROM after WHERE repo = ?3 AND id = ?4)`, dstRepo, dstID, repo, id).Scan(&cycle)
		if err != nil {
			return false, fmt.Errorf("look for a cycle of blocks links: %w", err)
		}
		if cycle {
			return false, fault.New(fault.Conflict, "%s#%s already blocks %s#%s (directly or through others): a blocks link back would make a cycle",
				reponame.Display(dstRepo), dstID, reponame.Display(repo), id)
		}
	}
	if err := unlink(ctx, tx, repo, id, dstRepo, dstID); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO issue_links(repo, issue_id, dst_repo, dst_id, kind, created_by, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, repo, id, dstRepo, dstID, kind, by, store.FormatTime(now)); err != nil {
		return false, fmt.Errorf("link %s: %w", id, err)
	}
	return true, emitLink(ctx, tx, repo, id, dstRepo, dstID, kind, by, now)
}

// RemoveLink removes the link between the two issues, in whichever
// direction it was made, and emits issue.edited on the first; false when
// there was none.
func RemoveLink(ctx context.Context, tx store.Querier, repo, id, dstRepo, dstID, by string, now time.Time) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM issue_links
		WHERE (repo = ?1 AND issue_id = ?2 AND dst_repo = ?3 AND dst_id = ?4) OR (repo = ?3 AND issue_id = ?4 AND dst_repo = ?1 AND dst_id = ?2)`,
		repo, id, dstRepo, dstID).Scan(&n); err != nil {
		return false, fmt.Errorf("read the link of %s: %w", id, err)
	}
	if n == 0 {
		return false, nil
	}
	if err := unlink(ctx, tx, repo, id, dstRepo, dstID); err != nil {
		return false, err
	}
	return true, emitLink(ctx, tx, repo, id, dstRepo, dstID, "", by, now)
}

func unlink(ctx context.Context, tx store.Querier, repo, id, dstRepo, dstID string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM issue_links
		WHERE (repo = ?1 AND issue_id = ?2 AND dst_repo = ?3 AND dst_id = ?4) OR (repo = ?3 AND issue_id = ?4 AND dst_repo = ?1 AND dst_id = ?2)`,
		repo, id, dstRepo, dstID); err != nil {
		return fmt.Errorf("unlink %s: %w", id, err)
	}
	return nil
}

// emitLink records issue.edited for a link made (kind) or removed ("").
func emitLink(ctx context.Context, tx store.Querier, repo, id, dstRepo, dstID, kind, by string, now time.Time) error {
	var k *string
	if kind != "" {
		k = &kind
	}
	_, err := events.Emit(ctx, tx, events.IssueEdited, repo, by, now, struct {
		ID   string  `json:"id"`
		Link any     `json:"link"`
		Kind *string `json:"kind"`
	}{id, struct {
		Repo string `json:"repo"`
		ID   string `json:"id"`
	}{dstRepo, dstID}, k})
	return err
}

// Links returns the links of issue id of repo, made from either side,
// oldest first; which of them a reader may see is the caller's to decide.
func Links(ctx context.Context, q store.Querier, repo, id string) ([]Link, error) {
	out := []Link{}
	err := store.Each(ctx, q, `SELECT l.other_repo, l.other_id, l.kind, coalesce(i.title, ''), coalesce(i.state, '') FROM (
			SELECT dst_repo AS other_repo, dst_id AS other_id, kind, created_at FROM issue_links WHERE repo = ?1 AND issue_id = ?2
			UNION ALL
			SELECT repo, issue_id, CASE kind WHEN 'blocks' THEN 'blocked-by' ELSE kind END, created_at FROM issue_links WHERE dst_repo = ?1 AND dst_id = ?2) l
		LEFT JOIN issues i ON i.repo = l.other_repo AND i.id = l.other_id
		ORDER BY l.created_at, l.other_repo, l.other_id`, []any{repo, id},
		func(rows *sql.Rows) error {
			var l Link
			if err := rows.Scan(&l.Repo, &l.ID, &l.Kind, &l.Title, (*string)(&l.State)); err != nil {
				return err
			}
			out = append(out, l)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read the links of %s: %w", id, err)
	}
	return out, nil
}
