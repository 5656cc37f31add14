package web

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/browse"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/highlight"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/text"
)

// repoPath is the path of repository key's pages: each segment escaped,
// slashes kept (/org/demo).
func repoPath(key string) string {
	segs := strings.Split(reponame.Display(key), "/")
	for i, sg := range segs {
		segs[i] = url.PathEscape(sg)
	}
	return "/" + strings.Join(segs, "/")
}

// pagePath is the path of a page of repository key: /org/demo/-/rest….
func pagePath(key string, rest ...string) string {
	return repoPath(key) + "/-/" + strings.Join(rest, "/")
}

func (s *Server) pageRepos(w http.ResponseWriter, r *http.Request) error {
	list, err := s.readable(r.Context(), principalOf(r))
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "repos", map[string]any{"Title": "Repositories", "Repos": list})
	return nil
}

// pageRef sends a REPO#PREFIX cross-reference to the issue or patch it names.
func (s *Server) pageRef(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	prefix := pathVar(r, "id")
	id, ierr := issues.Resolve(r.Context(), s.cfg.DB.R(), key, prefix)
	if ierr == nil {
		http.Redirect(w, r, pagePath(key, "issues", id), http.StatusFound)
		return nil
	}
	pid, perr := patches.Resolve(r.Context(), s.cfg.DB.R(), key, prefix)
	if perr == nil {
		http.Redirect(w, r, pagePath(key, "patches", pid), http.StatusFound)
		return nil
	}
	if fault.KindOf(ierr) != fault.NotFound {
		return ierr
	}
	return perr
}

func (s *Server) pageIssues(w http.ResponseWriter, r *http.Request) error {
	key, lvl, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = issues.Open
	}
	if err := issues.CheckState(state); err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	text := strings.TrimSpace(q.Get("q"))
	var list []issues.Issue
	if text != "" {
		list, err = s.searchIssues(r.Context(), key, state, text, limit, after)
	} else {
		list, err = issues.List(r.Context(), s.cfg.DB.R(), key, state, limit, after, s.now())
	}
	if err != nil {
		return err
	}
	next := ""
	if len(list) == limit {
		next = list[len(list)-1].ID
	}
	ids := make([]string, len(list))
	for i, is := range list {
		ids[i] = is.ID
	}
	counts, err := issues.CommentCounts(r.Context(), s.cfg.DB.R(), key, ids)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "issues", map[string]any{
		"Title": "Issues · " + reponame.Display(key), "Repo": key, "Tab": "issues", "Level": lvl.String(),
		"Issues": list, "State": state, "Q": text, "Next": next, "After": after, "Counts": counts,
	})
	return nil
}

// searchIssues finds issues whose title or body holds text (case folded),
// newest first. Text of three characters or more goes through the trigram
// index issues_fts; shorter text falls back to a LIKE scan bounded by the
// repo/state index. Each hit is then read with its live lease through
// issues.Lookup, since issues.List has no text filter.
func (s *Server) searchIssues(ctx context.Context, key, state, text string, limit int, after string) ([]issues.Issue, error) {
	if state == "" {
		state = issues.Open
	}
	if err := issues.CheckState(state); err != nil {
		return nil, err
	}
	if len(text) > 200 {
		return nil, fault.New(fault.Usage, "search text too long: at most 200 bytes")
	}
	// Both queries walk newest first and stop at limit: the trigram index
	// hands out its rowids (= issues.seq) in descending order, so a word
	// found in every issue costs no more than a rare one.
	query := `SELECT i.id FROM issues_fts f JOIN issues i ON i.seq = f.rowid WHERE issues_fts MATCH ? AND i.repo = ?`
	args := []any{`"` + strings.ReplaceAll(text, `"`, `""`) + `"`, key}
	order := " ORDER BY f.rowid DESC LIMIT ?"
	seqCol := "f.rowid"
	if utf8.RuneCountInString(text) < 3 {
		// Trigrams need three characters; shorter text scans with LIKE.
		pat := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(text) + "%"
		query = `SELECT i.id FROM issues i WHERE (i.title LIKE ? ESCAPE '\' OR i.body LIKE ? ESCAPE '\') AND i.repo = ?`
		args = []any{pat, pat, key}
		order = " ORDER BY i.seq DESC LIMIT ?"
		seqCol = "i.seq"
	}
	if state != "all" {
		query += " AND i.state = ?"
		args = append(args, state)
	}
	if after != "" {
		id, err := issues.Resolve(ctx, s.cfg.DB.R(), key, after)
		if err != nil {
			return nil, err
		}
		query += " AND " + seqCol + " < (SELECT seq FROM issues WHERE repo = ? AND id = ?)"
		args = append(args, key, id)
	}
	args = append(args, limit)
	var out []issues.Issue
	err := s.cfg.DB.Read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, query+order, args...)
		if err != nil {
			return fmt.Errorf("search issues: %w", err)
		}
		var found []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("search issues: %w", err)
			}
			found = append(found, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("search issues: %w", err)
		}
		out = make([]issues.Issue, 0, len(found))
		for _, id := range found {
			is, ok, err := issues.Lookup(ctx, tx, key, id, s.now())
			if err != nil {
				return err
			}
			if ok {
				out = append(out, is)
			}
		}
		return nil
	})
	return out, err
}

// formError reads a posted form and checks its session and CSRF token.
func (s *Server) formError(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		return fault.New(fault.TooLarge, "form too large")
	}
	return s.checkForm(r)
}

// formTarget is target for a posted form, after formError.
func (s *Server) formTarget(w http.ResponseWriter, r *http.Request, need access.Level, resolve resolver) (target, error) {
	if err := s.formError(w, r); err != nil {
		return target{}, err
	}
	return s.target(r, need, resolve)
}

func (s *Server) postIssue(w http.ResponseWriter, r *http.Request) error {
	if err := s.formError(w, r); err != nil {
		return err
	}
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	is, err := s.fileIssue(r.Context(), key, principalOf(r), r.PostFormValue("title"), crlf(r.PostFormValue("body")))
	if err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(key, "issues", is.ID), http.StatusSeeOther)
	return nil
}

// crlf undoes the CRLF line ends browsers send in textareas.
func crlf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

type linkedPatch struct {
	ID, Title, State string
	Merge            *patches.Merge
}

// Budgets of the issue page's comments: a page holds at most
// commentsPage comments and stops once their bodies pass commentsBytes
// (one longer comment still shows, alone).
const (
	commentsPage  = 50
	commentsBytes = 512 << 10
)

func (s *Server) pageIssue(w http.ResponseWriter, r *http.Request) error {
	t, err := s.target(r, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	key := t.key
	q := r.URL.Query()
	after, from := q.Get("after"), q.Get("from")
	var d issues.Detail
	var linked []linkedPatch
	var comments []issues.Comment
	var more bool
	var count int
	err = s.cfg.DB.Read(r.Context(), func(tx *sql.Tx) error {
		var err error
		if d, err = issues.GetHead(r.Context(), tx, key, t.id, s.now()); err != nil {
			return err
		}
		if comments, more, err = issues.CommentPage(r.Context(), tx, key, t.id, after, from, commentsPage, commentsBytes); err != nil {
			return err
		}
		if count, err = issues.CommentCount(r.Context(), tx, key, t.id); err != nil {
			return err
		}
		for _, pid := range d.Patches {
			lp := linkedPatch{ID: pid}
			if p, ok, err := patches.Lookup(r.Context(), tx, key, pid); err != nil {
				return err
			} else if ok {
				lp.Title, lp.State, lp.Merge = p.Title, p.State, p.Merge
			}
			linked = append(linked, lp)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if d.ID != pathVar(r, "id") {
		http.Redirect(w, r, pagePath(key, "issues", d.ID), http.StatusFound)
		return nil
	}
	me := principalOf(r)
	canState := issues.MayChange(d.Issue, me, t.lvl, true, "close") == nil
	data := map[string]any{
		"Title": d.Title + " · " + reponame.Display(key), "Repo": key, "Tab": "issues",
		"Issue": d, "Linked": linked, "CanState": canState,
		"Comments": comments, "CommentCount": count, "Paged": after != "" || from != "",
	}
	if more && len(comments) > 0 {
		data["NextComments"] = pagePath(key, "issues", d.ID) + "?after=" + comments[len(comments)-1].ID + "#comments"
	}
	if cb := closedBy(d.Issue, linked); cb != nil {
		data["ClosedBy"] = cb
	}
	s.render(w, r, http.StatusOK, "issue", data)
	return nil
}

// closedBy is the linked patch whose merge closed the issue: the merge
// scan closes a "Fixes:" issue in the merge's own transaction, so its
// closing time is the merge's.
func closedBy(is issues.Issue, linked []linkedPatch) *linkedPatch {
	if is.State != issues.Closed || is.ClosedAt == nil {
		return nil
	}
	for i, lp := range linked {
		if lp.Merge != nil && lp.Merge.At == *is.ClosedAt {
			return &linked[i]
		}
	}
	return nil
}

func (s *Server) postComment(w http.ResponseWriter, r *http.Request) error {
	t, err := s.formTarget(w, r, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	c, err := s.addComment(r.Context(), t.key, t.id, principalOf(r), crlf(r.PostFormValue("body")), 0, false)
	if err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(t.key, "issues", t.id)+"?from="+c.ID+"#c-"+c.ID, http.StatusSeeOther)
	return nil
}

func (s *Server) postIssueState(w http.ResponseWriter, r *http.Request) error {
	t, err := s.formTarget(w, r, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	state := r.PostFormValue("state")
	if _, err := s.changeIssue(r.Context(), t.key, t.id, issues.Edit{Principal: principalOf(r), Level: t.lvl, State: &state}); err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(t.key, "issues", t.id), http.StatusSeeOther)
	return nil
}

func (s *Server) pagePatches(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	state := r.URL.Query().Get("state")
	if state == "" {
		state = patches.Open
	}
	if err := patches.CheckState(state); err != nil {
		return err
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	var list []patches.Patch
	reviewState := map[string]string{}
	err = s.cfg.DB.Read(r.Context(), func(tx *sql.Tx) error {
		var err error
		if list, err = patches.List(r.Context(), tx, key, state, limit, after); err != nil {
			return err
		}
		for _, p := range list {
			rs, err := patches.Reviews(r.Context(), tx, key, p.ID)
			if err != nil {
				return err
			}
			if sum := review.Summarize(rs, p.Head().Number); len(rs) > 0 {
				reviewState[p.ID] = sum.String()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	next := ""
	if len(list) == limit {
		next = list[len(list)-1].ID
	}
	s.render(w, r, http.StatusOK, "patches", map[string]any{
		"Title": "Patches · " + reponame.Display(key), "Repo": key, "Tab": "patches",
		"Patches": list, "State": state, "Next": next, "ReviewState": reviewState,
	})
	return nil
}

// revisionParam reads a revision number of p from a query parameter (0
// when absent): what is not a number from 1 is a bad request (400), as the
// verbs' --revision; a number p has no revision for is not found (404).
func revisionParam(v string, p patches.Patch) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fault.New(fault.Usage, "bad revision %q: revisions are numbered from 1", text.Clip(v))
	}
	if n > len(p.Revisions) {
		return 0, fault.New(fault.NotFound, "patch %s has no revision %d (it has %d)", p.ID, n, len(p.Revisions))
	}
	return n, nil
}

// maxRevisionCommits bounds the commits listed for a revision.
const maxRevisionCommits = 50

func (s *Server) pagePatch(w http.ResponseWriter, r *http.Request) error {
	t, p, tl, err := s.patch(r)
	if err != nil {
		return err
	}
	key := t.key
	if p.ID != pathVar(r, "id") {
		http.Redirect(w, r, pagePath(key, "patches", p.ID)+"?"+r.URL.RawQuery, http.StatusFound)
		return nil
	}
	q := r.URL.Query()
	to, from := len(p.Revisions), 0
	if v := q.Get("to"); v != "" {
		q.Set("rev", v)
	}
	if n, err := revisionParam(q.Get("rev"), p); err != nil {
		return err
	} else if n > 0 {
		to = n
	}
	if n, err := revisionParam(q.Get("from"), p); err != nil {
		return err
	} else if n != to {
		from = n
	}
	view := "unified"
	if q.Get("view") == "split" {
		view = "split"
	}
	// Links that keep the revision shown and switch the view, or keep the
	// view and switch the revision.
	self := func(v string, from, to int) string {
		u := url.Values{}
		if from > 0 {
			u.Set("from", strconv.Itoa(from))
			u.Set("to", strconv.Itoa(to))
		} else if to != len(p.Revisions) {
			u.Set("rev", strconv.Itoa(to))
		}
		if v == "split" {
			u.Set("view", v)
		}
		if len(u) == 0 {
			return pagePath(key, "patches", p.ID)
		}
		return pagePath(key, "patches", p.ID) + "?" + u.Encode()
	}
	rp, err := repos.Get(r.Context(), s.cfg.DB.R(), key)
	if err != nil {
		return err
	}
	sshURL, _, err := s.cloneURLs(r.Context(), key, rp.Public)
	if err != nil {
		return err
	}
	data := map[string]any{
		"Title": p.Title + " · " + reponame.Display(key), "Repo": key, "Tab": "patches",
		"Patch": p, "To": to, "From": from, "View": view,
		"UnifiedURL": self("unified", from, to), "SplitURL": self("split", from, to),
		"Wrapper": highlight.Wrapper,
	}
	var revLinks []revLink
	for _, rv := range p.Revisions {
		l := revLink{Revision: rv, URL: self(view, 0, rv.Number), On: rv.Number == to && from == 0}
		if rv.Number > 1 {
			l.InterdiffURL = self(view, rv.Number-1, rv.Number)
		}
		revLinks = append(revLinks, l)
	}
	data["Revisions"] = revLinks
	var general, inline []patches.Review
	for _, rv := range p.Reviews {
		// An anchor names a line of its revision's tree: the new side of
		// that revision's diff and of an interdiff into it.
		if rv.File != nil && rv.Line != nil && rv.Revision == to {
			inline = append(inline, rv)
		} else {
			general = append(general, rv)
		}
	}
	if to > 0 {
		dir, err := reponame.Dir(s.cfg.Root.ReposDir(), key)
		if err != nil {
			return err
		}
		rt := p.Revisions[to-1]
		data["Fetch"] = fmt.Sprintf("git fetch %s refs/collab/patches/%s/rev/%s && git checkout FETCH_HEAD", sshURL, p.ID, rt.Commit)
		var res diff.Result
		if from > 0 {
			rf := p.Revisions[from-1]
			res, err = diff.Interdiff(r.Context(), dir, diff.Range{Base: rf.BaseCommit, Commit: rf.Commit}, diff.Range{Base: rt.BaseCommit, Commit: rt.Commit}, diff.DefaultLimits())
		} else {
			res, err = diff.Revision(r.Context(), dir, diff.Range{Base: rt.BaseCommit, Commit: rt.Commit}, diff.DefaultLimits())
		}
		if err != nil {
			return fmt.Errorf("diff of patch %s: %w", p.ID, err)
		}
		commits, more, err := browse.Open(dir).Range(r.Context(), rt.BaseCommit, rt.Commit, maxRevisionCommits)
		if err != nil {
			return fmt.Errorf("commits of patch %s revision %d: %w", p.ID, to, err)
		}
		dv := buildDiff(r.Context(), s.colour(), res, inline)
		data["Diff"] = res
		data["View2"] = dv
		data["Commits"] = commitRows(key, commits)
		data["MoreCommits"] = more
		general = append(general, dv.Rest...)
	}
	data["Reviews"] = general
	data["Timeline"] = tl
	data["Summary"] = review.Summarize(p.Reviews, p.Head().Number)
	s.render(w, r, http.StatusOK, "patch", data)
	return nil
}

// revLink is a row of the revisions list with its links.
type revLink struct {
	patches.Revision
	URL, InterdiffURL string
	On                bool
}

type leaseRow struct {
	leases.Lease
	Title string
}

func (s *Server) pageLeases(w http.ResponseWriter, r *http.Request) error {
	key, _, err := s.repoAccess(r, access.Read)
	if err != nil {
		return err
	}
	var rows []leaseRow
	err = s.cfg.DB.Read(r.Context(), func(tx *sql.Tx) error {
		ls, err := leases.List(r.Context(), tx, key, s.now())
		if err != nil {
			return err
		}
		for _, l := range ls {
			row := leaseRow{Lease: l}
			if is, ok, err := issues.Lookup(r.Context(), tx, key, l.IssueID, s.now()); err != nil {
				return err
			} else if ok {
				row.Title = is.Title
			}
			rows = append(rows, row)
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "leases", map[string]any{
		"Title": "Leases · " + reponame.Display(key), "Repo": key, "Tab": "leases", "Leases": rows,
	})
	return nil
}

// postReview posts a review (or an inline comment with file and line)
// from the patch page's form, through review.Post like the API.
func (s *Server) postReview(w http.ResponseWriter, r *http.Request) error {
	if err := s.formError(w, r); err != nil {
		return err
	}
	in := review.Input{Verdict: r.PostFormValue("verdict"),
		Body: crlf(r.PostFormValue("body")), File: strings.TrimSpace(r.PostFormValue("file"))}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"revision", &in.Revision}, {"line", &in.Line}} {
		if v := strings.TrimSpace(r.PostFormValue(f.name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fault.New(fault.Usage, "bad %s %q", f.name, text.Clip(v))
			}
			*f.dst = n
		}
	}
	t, rv, err := s.postReviewOf(r, in)
	if err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(t.key, "patches", t.id)+"?rev="+strconv.Itoa(rv.Revision)+"#r-"+rv.ID, http.StatusSeeOther)
	return nil
}
