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
// a word boundary; upper-case hex is folded, as id input is. Compiled on
// first use: collab-hook starts once per ssh command, and most never parse
// a body.
var refRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^A-Za-z0-9._/#-])([A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*)#([0-9A-Fa-f]{4,64})\b`)
})

// RefAt is a reference and where it stands in the text searched:
// text[Start:End] is NAME#PREFIX as written.
type RefAt struct {
	Ref
	Start, End int
}

// FindRefs returns every reference in text with its position, in order,
// repeats included; names that are not valid repository names are skipped.
// It is the one parser of references: ParseRefs records what it finds and
// the web's markdown renderer links it, so every stored reference is a link.
func FindRefs(text string) []RefAt {
	var out []RefAt
	for _, m := range refRE().FindAllStringSubmatchIndex(text, -1) {
		key, err := reponame.Key(text[m[2]:m[3]])
		if err != nil {
			continue
		}
		p, err := ids.CheckPrefix(text[m[4]:m[5]])
		if err != nil {
			continue
		}
		out = append(out, RefAt{Ref: Ref{Repo: key, Prefix: p}, Start: m[2], End: m[5]})
	}
	return out
}

// ParseRefs returns the distinct references in body, in order of first
// appearance.
func ParseRefs(body string) []Ref {
	var out []Ref
	seen := map[Ref]bool{}
	for _, r := range FindRefs(body) {
		if !seen[r.Ref] {
			seen[r.Ref] = true
			out = append(out, r.Ref)
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
