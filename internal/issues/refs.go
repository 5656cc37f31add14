package issues

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// Ref is a reference REPO#PREFIX (or #PREFIX, in the writer's own
// repository) found in a body: Repo is the repository key (org/foo.git;
// "" in FindRefs's answer for #PREFIX), Prefix the lowercase id prefix as
// written. Kind and ID are what it named when it was written: the one
// issue or patch its prefix named among those the writer could read, or
// "" when it named none or several and stayed text.
type Ref struct {
	Repo   string  `json:"repo"`
	Prefix string  `json:"prefix"`
	Kind   *string `json:"kind"`
	ID     *string `json:"id"`
}

// refRE finds REPO#PREFIX, or #PREFIX, not glued to a preceding name,
// path, URL or entity character (so https://host/page#abcd1234 and
// &#1234; are not references) and ending at a word boundary; upper-case
// hex is folded, as id input is. Compiled on first use: collab-hook
// starts once per ssh command, and most never parse a body.
var refRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[^A-Za-z0-9._/#&-])((?:[A-Za-z0-9][A-Za-z0-9._-]*(?:/[A-Za-z0-9][A-Za-z0-9._-]*)*)?)#([0-9A-Fa-f]{4,64})\b`)
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
		var key string
		if m[2] < m[3] {
			k, err := reponame.Key(text[m[2]:m[3]])
			if err != nil {
				continue
			}
			key = k
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
// appearance, with #PREFIX taken as one in repo.
func ParseRefs(repo, body string) []Ref {
	var out []Ref
	type key struct{ repo, prefix string }
	seen := map[key]bool{}
	for _, r := range FindRefs(body) {
		if r.Repo == "" {
			r.Repo = repo
		}
		if k := (key{r.Repo, r.Prefix}); !seen[k] {
			seen[k] = true
			out = append(out, r.Ref)
		}
	}
	return out
}

// Unresolved is a reference that stayed text, and why: it named no
// issue or patch the writer may read (Ambiguous false), or several.
type Unresolved struct {
	Ref       string `json:"ref"`
	Ambiguous bool   `json:"ambiguous"`
}

// String says it to the writer.
func (u Unresolved) String() string {
	if u.Ambiguous {
		return u.Ref + " names more than one issue or patch; it stays text (give more of the id)"
	}
	return u.Ref + " names no issue or patch you can read; it stays text"
}

// RecordRefs stores the references in body as links from the source
// (srcKind: issue, comment, patch or review; srcID its id) in srcRepo,
// each resolved for author, who wrote it: to the one issue or patch its
// prefix names in a repository author may read. It returns those that
// stayed text, for the writer to be told.
func RecordRefs(ctx context.Context, tx store.Querier, srcRepo, srcKind, srcID, author, body string) ([]Unresolved, error) {
	var out []Unresolved
	for _, r := range ParseRefs(srcRepo, body) {
		kind, id, n, err := resolveRef(ctx, tx, author, r.Repo, r.Prefix)
		if err != nil {
			return nil, err
		}
		var k, i any
		if n == 1 {
			k, i = kind, id
		} else {
			out = append(out, Unresolved{Ref: r.String(), Ambiguous: n > 1})
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO xrefs(src_repo, src_kind, src_id, dst_repo, dst_prefix, dst_kind, dst_id)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, srcRepo, srcKind, srcID, r.Repo, r.Prefix, k, i); err != nil {
			return nil, fmt.Errorf("record reference %s: %w", r, err)
		}
	}
	return out, nil
}

// resolveRef counts the issues and patches of repo whose id starts with
// prefix (up to 2), if author may read repo, and returns the one when
// there is one. A repository author may not read names nothing, exactly
// like a missing one.
func resolveRef(ctx context.Context, q store.Querier, author, repo, prefix string) (kind, id string, n int, err error) {
	lvl, err := access.Of(ctx, q, author, repo)
	if err != nil || lvl < access.Read {
		return "", "", 0, err
	}
	// Every hex id starting with prefix sorts in [prefix, prefix+"g").
	rows, err := q.QueryContext(ctx, `SELECT 'issue', id FROM (SELECT id FROM issues WHERE repo = ?1 AND id >= ?2 AND id < ?3 LIMIT 2) AS i
		UNION ALL SELECT 'patch', id FROM (SELECT id FROM patches WHERE repo = ?1 AND id >= ?2 AND id < ?3 LIMIT 2) AS p`,
		repo, prefix, prefix+"g")
	if err != nil {
		return "", "", 0, fmt.Errorf("resolve %s#%s: %w", reponame.Display(repo), prefix, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&kind, &id); err != nil {
			return "", "", 0, fmt.Errorf("resolve %s#%s: %w", reponame.Display(repo), prefix, err)
		}
		n++
	}
	return kind, id, n, rows.Err()
}

// Resolved returns the full id that (repo, prefix) was resolved to when
// some body referred to it, and its kind ("" when none was): since a
// prefix that named one id names it among any later ones, they agree.
func Resolved(ctx context.Context, q store.Querier, repo, prefix string) (kind, id string, err error) {
	err = q.QueryRowContext(ctx, `SELECT dst_kind, dst_id FROM xrefs WHERE dst_repo = ? AND dst_prefix = ? AND dst_id IS NOT NULL LIMIT 1`,
		repo, prefix).Scan(&kind, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read the reference %s#%s: %w", reponame.Display(repo), prefix, err)
	}
	return kind, id, nil
}

// refsOf returns the references made by an issue's body and its comments.
func refsOf(ctx context.Context, q store.Querier, repo, id string) ([]Ref, error) {
	rows, err := q.QueryContext(ctx, `SELECT dst_repo, dst_prefix, max(dst_kind), max(dst_id) FROM xrefs
		WHERE src_repo = ?1 AND ((src_kind = 'issue' AND src_id = ?2)
		   OR (src_kind = 'comment' AND src_id IN (SELECT id FROM comments WHERE repo = ?1 AND issue_id = ?2)))
		GROUP BY dst_repo, dst_prefix ORDER BY dst_repo, dst_prefix`, repo, id)
	if err != nil {
		return nil, fmt.Errorf("read references of %s: %w", id, err)
	}
	defer rows.Close()
	out := []Ref{}
	for rows.Next() {
		var r Ref
		if err := rows.Scan(&r.Repo, &r.Prefix, &r.Kind, &r.ID); err != nil {
			return nil, fmt.Errorf("read references of %s: %w", id, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Mention is a place that refers to an issue or patch: an issue, or a
// comment on one (Kind "issue"), or a review of a patch ("patch"), in
// Repo; ID is the issue or patch, Title its title.
type Mention struct {
	Repo  string `json:"repo"`
	Kind  string `json:"kind"`
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Mentions returns where the issue or patch id of repo was referred to
// (resolved references only), oldest source first, one entry per issue or
// patch; which of them a reader may see is the caller's to decide.
func Mentions(ctx context.Context, q store.Querier, repo, id string) ([]Mention, error) {
	rows, err := q.QueryContext(ctx, `SELECT m.repo, m.kind, m.id, coalesce(i.title, p.title, '') FROM (
		SELECT x.src_repo AS repo, CASE x.src_kind WHEN 'review' THEN 'patch' ELSE 'issue' END AS kind,
			CASE x.src_kind WHEN 'comment' THEN (SELECT c.issue_id FROM comments c WHERE c.id = x.src_id)
				WHEN 'review' THEN (SELECT r.patch_id FROM reviews r WHERE r.id = x.src_id)
				ELSE x.src_id END AS id, min(x.rowid) AS first
		FROM xrefs x WHERE x.dst_repo = ? AND x.dst_id = ?
		GROUP BY 1, 2, 3) m
		LEFT JOIN issues i ON m.kind = 'issue' AND i.repo = m.repo AND i.id = m.id
		LEFT JOIN patches p ON m.kind = 'patch' AND p.repo = m.repo AND p.id = m.id
		WHERE m.id IS NOT NULL AND NOT (m.repo = ? AND m.id = ?)
		ORDER BY m.first`, repo, id, repo, id)
	if err != nil {
		return nil, fmt.Errorf("read mentions of %s: %w", id, err)
	}
	defer rows.Close()
	out := []Mention{}
	for rows.Next() {
		var m Mention
		if err := rows.Scan(&m.Repo, &m.Kind, &m.ID, &m.Title); err != nil {
			return nil, fmt.Errorf("read mentions of %s: %w", id, err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// String renders the reference as written: REPO#PREFIX.
func (r Ref) String() string { return reponame.Display(r.Repo) + "#" + strings.ToLower(r.Prefix) }
