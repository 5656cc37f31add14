package issues

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

// MaxSearch bounds the text of a search.
const MaxSearch = 200

// Search finds the issues of repo in state (as List) that carry every
// label of ls (a set, labels.Set) and whose title or body holds text
// (case folded), newest first, at most limit, after the issue
// after. Text of three characters or more goes through the trigram index
// issues_fts; shorter text falls back to a LIKE scan bounded by the
// repo/state index. Each hit is then read with its live lease through
// Lookup. q should be one read transaction, so that hits and rows agree.
func Search(ctx context.Context, q store.Querier, repo, state, text string, ls []string, limit int, after string, now time.Time) ([]Issue, error) {
	if state == "" {
		state = string(Open)
	}
	if err := CheckState(state); err != nil {
		return nil, err
	}
	if len(text) > MaxSearch {
		return nil, fault.New(fault.Usage, "search text too long: at most %d bytes", MaxSearch)
	}
	// Both queries walk newest first and stop at limit: the trigram index
	// hands out its rowids (= issues.seq) in descending order, so a word
	// found in every issue costs no more than a rare one.
	query := `SELECT i.id FROM issues_fts f JOIN issues i ON i.seq = f.rowid WHERE issues_fts MATCH ? AND i.repo = ?`
	args := []any{`"` + strings.ReplaceAll(text, `"`, `""`) + `"`, repo}
	order := " ORDER BY f.rowid DESC LIMIT ?"
	seqCol := "f.rowid"
	if utf8.RuneCountInString(text) < 3 {
		// Trigrams need three characters; shorter text scans with LIKE.
		pat := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(text) + "%"
		query = `SELECT i.id FROM issues i WHERE (i.title LIKE ? ESCAPE '\' OR i.body LIKE ? ESCAPE '\') AND i.repo = ?`
		args = []any{pat, pat, repo}
		order = " ORDER BY i.seq DESC LIMIT ?"
		seqCol = "i.seq"
	}
	if state != All {
		query += " AND i.state = ?"
		args = append(args, state)
	}
	cond, largs := CarriesAll("i.seq", ls)
	query, args = query+cond, append(args, largs...)
	acond, aargs, err := afterCond(ctx, q, repo, after, seqCol)
	if err != nil {
		return nil, err
	}
	query, args = query+acond, append(append(args, aargs...), limit)
	var found []string
	err = store.Each(ctx, q, query+order, args, func(rows *sql.Rows) error {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		found = append(found, id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search issues: %w", err)
	}
	out := make([]Issue, 0, len(found))
	for _, id := range found {
		is, ok, err := Lookup(ctx, q, repo, id, now)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, is)
		}
	}
	return out, nil
}
