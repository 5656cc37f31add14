package patches

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/collab-forge/collab/internal/store"
)

// Related is a patch of the same stack as another, as its parents and
// children name it (Gerrit's relation chain).
type Related struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	State State  `json:"state"`
	// Commit is its latest revision's commit.
	Commit string `json:"commit"`
}

// MaxChain bounds how far Chain walks up or down a stack: a relation chain
// longer than this is shown cut.
const MaxChain = 100

// fillRelations sets p's Parents (its latest revision's parent patch) and
// Children (the patches whose latest revision names p as its parent).
func fillRelations(ctx context.Context, q store.Querier, p *Patch) error {
	var err error
	if parent := p.Head().Parent; parent != "" {
		r, ok, err := related(ctx, q, p.Repo, parent)
		if err != nil {
			return err
		}
		if ok {
			p.Parents = append(p.Parents, r)
		}
	}
	p.Children, err = Children(ctx, q, p.Repo, p.ID)
	return err
}

// fillRelationsPage is fillRelations for a page of patches in two
// queries, not one or two per patch.
func fillRelationsPage(ctx context.Context, q store.Querier, repo string, ps []*Patch) error {
	byID := make(map[string]*Patch, len(ps))
	ids := make([]any, 0, len(ps))
	var parents []any
	for _, p := range ps {
		byID[p.ID] = p
		ids = append(ids, p.ID)
		if parent := p.Head().Parent; parent != "" {
			parents = append(parents, parent)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	const latest = `(SELECT commit_oid FROM revisions WHERE repo = p.repo AND patch_id = p.id ORDER BY number DESC LIMIT 1)`
	if len(parents) > 0 {
		found := map[string]Related{}
		err := store.Each(ctx, q, `SELECT p.id, p.title, p.state, COALESCE(`+latest+`, '') FROM patches p
			WHERE p.repo = ? AND p.id IN (`+marks(len(parents))+`)`, append([]any{repo}, parents...), func(rows *sql.Rows) error {
			var r Related
			if err := rows.Scan(&r.ID, &r.Title, (*string)(&r.State), &r.Commit); err != nil {
				return err
			}
			found[r.ID] = r
			return nil
		})
		if err != nil {
			return fmt.Errorf("read the parents of a page of patches: %w", err)
		}
		for _, p := range ps {
			if r, ok := found[p.Head().Parent]; ok {
				p.Parents = append(p.Parents, r)
			}
		}
	}
	err := store.Each(ctx, q, `SELECT r.parent_patch, p.id, p.title, p.state, r.commit_oid FROM revisions r
		JOIN patches p ON p.repo = r.repo AND p.id = r.patch_id
		WHERE r.repo = ? AND r.parent_patch IN (`+marks(len(ids))+`)
		AND r.number = (SELECT MAX(number) FROM revisions WHERE repo = r.repo AND patch_id = r.patch_id)
		ORDER BY p.seq`, append([]any{repo}, ids...), func(rows *sql.Rows) error {
		var parent string
		var c Related
		if err := rows.Scan(&parent, &c.ID, &c.Title, (*string)(&c.State), &c.Commit); err != nil {
			return err
		}
		if p := byID[parent]; p != nil {
			p.Children = append(p.Children, c)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read the children of a page of patches: %w", err)
	}
	return nil
}

func marks(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// related reads patch id as a Related.
func related(ctx context.Context, q store.Querier, repo, id string) (Related, bool, error) {
	r := Related{ID: id}
	err := q.QueryRowContext(ctx, `SELECT p.title, p.state, COALESCE((SELECT commit_oid FROM revisions
		WHERE repo = p.repo AND patch_id = p.id ORDER BY number DESC LIMIT 1), '')
		FROM patches p WHERE p.repo = ? AND p.id = ?`, repo, id).Scan(&r.Title, (*string)(&r.State), &r.Commit)
	if err == sql.ErrNoRows {
		return Related{}, false, nil
	}
	if err != nil {
		return Related{}, false, fmt.Errorf("read patch %s: %w", id, err)
	}
	return r, true, nil
}

// parentOf returns the parent patch of id's latest revision ("" for none).
func parentOf(ctx context.Context, q store.Querier, repo, id string) (string, error) {
	var parent string
	err := q.QueryRowContext(ctx, `SELECT parent_patch FROM revisions WHERE repo = ? AND patch_id = ?
		ORDER BY number DESC LIMIT 1`, repo, id).Scan(&parent)
	if err == sql.ErrNoRows {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the parent of patch %s: %w", id, err)
	}
	return parent, nil
}

// Children returns the patches whose latest revision sits on patch id's
// (its children in a stack), oldest first.
func Children(ctx context.Context, q store.Querier, repo, id string) ([]Related, error) {
	out := []Related{}
	err := store.Each(ctx, q, `SELECT p.id, p.title, p.state, r.commit_oid FROM revisions r
		JOIN patches p ON p.repo = r.repo AND p.id = r.patch_id
		WHERE r.repo = ? AND r.parent_patch = ?
		AND r.number = (SELECT MAX(number) FROM revisions WHERE repo = r.repo AND patch_id = r.patch_id)
		ORDER BY p.seq`, []any{repo, id}, func(rows *sql.Rows) error {
		var c Related
		if err := rows.Scan(&c.ID, &c.Title, (*string)(&c.State), &c.Commit); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the children of patch %s: %w", id, err)
	}
	return out, nil
}

// Ancestors returns patch id's parents in its stack, nearest first, up to
// MaxChain (a cycle, which a push refuses, stops the walk).
func Ancestors(ctx context.Context, q store.Querier, repo, id string) ([]Related, error) {
	var out []Related
	seen := map[string]bool{id: true}
	for len(out) < MaxChain {
		parent, err := parentOf(ctx, q, repo, id)
		if err != nil || parent == "" || seen[parent] {
			return out, err
		}
		r, ok, err := related(ctx, q, repo, parent)
		if err != nil || !ok {
			return out, err
		}
		seen[parent] = true
		out = append(out, r)
		id = parent
	}
	return out, nil
}

// OpenAncestors returns the open patches below id in its stack, the
// bottom one first: what must merge before it, and what patch submit
// --chain submits with it.
func OpenAncestors(ctx context.Context, q store.Querier, repo, id string) ([]Related, error) {
	all, err := Ancestors(ctx, q, repo, id)
	if err != nil {
		return nil, err
	}
	var open []Related
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].State == Open {
			open = append(open, all[i])
		}
	}
	return open, nil
}

// Chain returns id's whole relation chain for its page: its ancestors
// (the bottom first), then id's descendants along the first child at
// each level, up to MaxChain each way. id itself is not in it.
func Chain(ctx context.Context, q store.Querier, repo, id string) (below, above []Related, err error) {
	anc, err := Ancestors(ctx, q, repo, id)
	if err != nil {
		return nil, nil, err
	}
	for i := len(anc) - 1; i >= 0; i-- {
		below = append(below, anc[i])
	}
	seen := map[string]bool{id: true}
	for cur := id; len(above) < MaxChain; {
		kids, err := Children(ctx, q, repo, cur)
		if err != nil {
			return nil, nil, err
		}
		if len(kids) == 0 || seen[kids[0].ID] {
			break
		}
		seen[kids[0].ID] = true
		above = append(above, kids[0])
		cur = kids[0].ID
	}
	return below, above, nil
}
