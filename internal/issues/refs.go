package issues

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// Ref is a cross-repository reference REPO#PREFIX found in a body: Repo is
// the repository key (org/foo.git), Prefix the lowercase id prefix as
// written. It names an issue or a patch; the web resolves it when shown.
type Ref struct {
	Repo   string `json:"repo"`
	Prefix string `json:"prefix"`
}

// refRE finds REPO#PREFIX not glued to a preceding name, path or URL
// character (so https://host/page#abcd1234 is not a reference) and ending at
// a word boundary; upper-case hex is folded, as id input is. Compiled on first use: collab-hook starts once per ssh
// command, and most never parse a body.
var refRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^A-Za-z0-9._/#-])([A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*)#([0-9A-Fa-f]{4,64})\b`)
})

// ParseRefs returns the distinct references in body, in order of first
// appearance. Names that are not valid repository names are skipped.
func ParseRefs(body string) []Ref {
	var out []Ref
	seen := map[Ref]bool{}
	for _, m := range refRE().FindAllStringSubmatch(body, -1) {
		key, err := reponame.Key(m[1])
		if err != nil {
			continue
		}
		p, err := ids.CheckPrefix(m[2])
		if err != nil {
			continue
		}
		r := Ref{Repo: key, Prefix: p}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// RecordRefs stores the references in body as links from the source
// (srcKind: issue, comment, patch or review; srcID its id) in srcRepo.
func RecordRefs(ctx context.Context, tx store.Querier, srcRepo, srcKind, srcID, body string) error {
	for _, r := range ParseRefs(body) {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO xrefs(src_repo, src_kind, src_id, dst_repo, dst_prefix)
			VALUES (?, ?, ?, ?, ?)`, srcRepo, srcKind, srcID, r.Repo, r.Prefix); err != nil {
			return fmt.Errorf("record reference %s#%s: %w", reponame.Display(r.Repo), r.Prefix, err)
		}
	}
	return nil
}

// refsOf returns the references made by an issue's body and its comments.
func refsOf(ctx context.Context, q store.Querier, repo, id string) ([]Ref, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT dst_repo, dst_prefix FROM xrefs
		WHERE src_repo = ?1 AND ((src_kind = 'issue' AND src_id = ?2)
		   OR (src_kind = 'comment' AND src_id IN (SELECT id FROM comments WHERE repo = ?1 AND issue_id = ?2)))
		ORDER BY dst_repo, dst_prefix`, repo, id)
	if err != nil {
		return nil, fmt.Errorf("read references of %s: %w", id, err)
	}
	defer rows.Close()
	out := []Ref{}
	for rows.Next() {
		var r Ref
		if err := rows.Scan(&r.Repo, &r.Prefix); err != nil {
			return nil, fmt.Errorf("read references of %s: %w", id, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// String renders the reference as written: REPO#PREFIX.
func (r Ref) String() string { return reponame.Display(r.Repo) + "#" + strings.ToLower(r.Prefix) }
