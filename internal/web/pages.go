package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/highlight"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
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
	list, err := s.ops.Repos(r.Context(), actor(r))
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "repos", map[string]any{"Title": "Repositories", "Repos": list})
	return nil
}

// pageDashboard is /-/dashboard: what waits for the signed-in reader's
// review, their open patches and the issues they hold, across every
// repository they may read. Signed out, it sends them to sign in.
func (s *Server) pageDashboard(w http.ResponseWriter, r *http.Request) error {
	if actor(r).Principal == "" {
		http.Redirect(w, r, "/login?next=/-/dashboard", http.StatusSeeOther)
		return nil
	}
	d, err := s.ops.Dashboard(r.Context(), actor(r))
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "dashboard", map[string]any{"Title": "Dashboard", "D": d})
	return nil
}

// pageRef sends a REPO#PREFIX cross-reference to the issue or patch it names.
func (s *Server) pageRef(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	found, err := s.ops.FindRef(r.Context(), actor(r), ref)
	if err != nil {
		return err
	}
	kind := "issues"
	if found.Kind == "patch" {
		kind = "patches"
	}
	http.Redirect(w, r, pagePath(found.Repo, kind, found.ID), http.StatusFound)
	return nil
}

func (s *Server) pageIssues(w http.ResponseWriter, r *http.Request) error {
	state := r.URL.Query().Get("state")
	if state == "" {
		state = string(issues.Open)
	}
	f, err := filterOf(r, state, strings.TrimSpace(r.URL.Query().Get("q")))
	if err != nil {
		return err
	}
	list, limit, after, err := s.listIssues(r, state, true)
	if err != nil {
		return err
	}
	key := list.Repo
	next := ""
	if len(list.Issues) == limit {
		next = list.Issues[len(list.Issues)-1].ID
	}
	s.render(w, r, http.StatusOK, "issues", map[string]any{
		"Title": "Issues · " + reponame.Display(key), "Repo": key, "Tab": "issues",
		"Issues": list.Issues, "State": state, "Q": strings.TrimSpace(r.URL.Query().Get("q")), "Next": next, "After": after,
		"Counts": list.Counts, "Filter": f,
	})
	return nil
}

// formError reads a posted form and checks its session and CSRF token.
func (s *Server) formError(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		return fault.New(fault.TooLarge, "form too large")
	}
	return s.checkForm(r)
}

// formRef is idRef for a posted form, after formError.
func (s *Server) formRef(w http.ResponseWriter, r *http.Request) (ops.Ref, error) {
	if err := s.formError(w, r); err != nil {
		return ops.Ref{}, err
	}
	return idRef(r)
}

func (s *Server) postIssue(w http.ResponseWriter, r *http.Request) error {
	if err := s.formError(w, r); err != nil {
		return err
	}
	name, err := repoName(r)
	if err != nil {
		return err
	}
	is, err := s.ops.FileIssue(r.Context(), actor(r), ops.FileIssue{Repo: name, Title: r.PostFormValue("title"), Body: crlf(r.PostFormValue("body"))})
	if err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(is.Repo, "issues", is.ID), http.StatusSeeOther)
	return nil
}

// crlf undoes the CRLF line ends browsers send in textareas.
func crlf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// Budgets of the issue page's comments: a page holds at most
// commentsPage comments and stops once their bodies pass commentsBytes
// (one longer comment still shows, alone).
const (
	commentsPage  = 50
	commentsBytes = 512 << 10
)

func (s *Server) pageIssue(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	after, from := q.Get("after"), q.Get("from")
	pg, err := s.ops.IssuePage(r.Context(), actor(r), ops.Comments{Issue: ref, After: after, From: from, Limit: commentsPage, MaxBytes: commentsBytes})
	if err != nil {
		return err
	}
	key := pg.Repo
	if pg.ID != ref.ID {
		http.Redirect(w, r, pagePath(key, "issues", pg.ID), http.StatusFound)
		return nil
	}
	data := map[string]any{
		"Title": pg.Title + " · " + reponame.Display(key), "Repo": key, "Tab": "issues",
		"Issue": pg.Detail, "Linked": pg.Linked, "CanState": pg.MayChangeState, "CanLabel": pg.MayLabel,
		"Comments": pg.Comments, "CommentCount": pg.Count, "Paged": after != "" || from != "",
	}
	if pg.More && len(pg.Comments) > 0 {
		data["NextComments"] = pagePath(key, "issues", pg.ID) + "?after=" + pg.Comments[len(pg.Comments)-1].ID + "#comments"
	}
	if cb := closedBy(pg.Issue, pg.Linked); cb != nil {
		data["ClosedBy"] = cb
	}
	s.render(w, r, http.StatusOK, "issue", data)
	return nil
}

// closedBy is the linked patch whose merge closed the issue: the merge
// scan closes a "Fixes:" issue in the merge's own transaction, so its
// closing time is the merge's.
func closedBy(is issues.Issue, linked []ops.LinkedPatch) *ops.LinkedPatch {
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
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	c, err := s.ops.Comment(r.Context(), actor(r), ops.Comment{Issue: ref, Body: crlf(r.PostFormValue("body"))})
	if err != nil {
		return s.refusedPost(w, r, "comment", err, s.pageIssue)
	}
	http.Redirect(w, r, pagePath(c.Repo, "issues", c.IssueID)+"?from="+c.ID+"#c-"+c.ID, http.StatusSeeOther)
	return nil
}

func (s *Server) postIssueState(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	state := issues.State(r.PostFormValue("state"))
	is, _, err := s.ops.EditIssue(r.Context(), actor(r), ops.EditIssue{Issue: ref, State: &state})
	if err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(is.Repo, "issues", is.ID), http.StatusSeeOther)
	return nil
}

// postIssueClaim is the issue page's Claim (an open-ended lease: the
// human's "assigned") and Release.
func (s *Server) postIssueClaim(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	if r.PostFormValue("release") != "" {
		out, err := s.ops.ReleaseLease(r.Context(), actor(r), ops.Release{Issue: ref})
		if err != nil {
			return s.refusedPost(w, r, "claim", err, s.pageIssue)
		}
		http.Redirect(w, r, pagePath(out.Repo, "issues", out.IssueID), http.StatusSeeOther)
		return nil
	}
	l, err := s.ops.AcquireLease(r.Context(), actor(r), ops.Acquire{Issue: ref})
	if err != nil {
		return s.refusedPost(w, r, "claim", err, s.pageIssue)
	}
	http.Redirect(w, r, pagePath(l.Repo, "issues", l.IssueID), http.StatusSeeOther)
	return nil
}

// postIssueEdit edits an issue's title and body from its page.
func (s *Server) postIssueEdit(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	title, body := r.PostFormValue("title"), crlf(r.PostFormValue("body"))
	is, _, err := s.ops.EditIssue(r.Context(), actor(r), ops.EditIssue{Issue: ref, Title: &title, Body: &body})
	if err != nil {
		return s.refusedPost(w, r, "issue-edit", err, s.pageIssue)
	}
	http.Redirect(w, r, pagePath(is.Repo, "issues", is.ID), http.StatusSeeOther)
	return nil
}

// postPatchEdit is the patch page's actions: close or reopen (state=),
// ready or work in progress (draft=), reviewers (add=, remove=), title
// and description (edit=1).
func (s *Server) postPatchEdit(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	if st := r.PostFormValue("state"); st != "" {
		ch, err := s.ops.SetPatchState(r.Context(), actor(r), ref, patches.State(st))
		if err != nil {
			return s.refusedPost(w, r, "actions", err, s.pagePatch)
		}
		http.Redirect(w, r, pagePath(ch.Patch.Repo, "patches", ch.Patch.ID), http.StatusSeeOther)
		return nil
	}
	in := ops.PatchEdit{Patch: ref}
	switch r.PostFormValue("draft") {
	case "wip":
		t := true
		in.Draft = &t
	case "ready":
		f := false
		in.Draft = &f
	}
	if v := strings.TrimSpace(r.PostFormValue("add")); v != "" {
		in.AddReviewers = strings.Fields(strings.ReplaceAll(v, ",", " "))
	}
	if v := strings.TrimSpace(r.PostFormValue("remove")); v != "" {
		in.RemoveReviewers = strings.Fields(strings.ReplaceAll(v, ",", " "))
	}
	if r.PostFormValue("edit") != "" {
		title, desc := r.PostFormValue("title"), crlf(r.PostFormValue("description"))
		in.Title, in.Description = &title, &desc
	}
	ch, err := s.ops.EditPatch(r.Context(), actor(r), in)
	if err != nil {
		form := "actions"
		switch {
		case in.Title != nil:
			form = "patch-edit"
		case in.AddReviewers != nil || in.RemoveReviewers != nil:
			form = "reviewers"
		}
		return s.refusedPost(w, r, form, err, s.pagePatch)
	}
	http.Redirect(w, r, pagePath(ch.Patch.Repo, "patches", ch.Patch.ID), http.StatusSeeOther)
	return nil
}

func (s *Server) pagePatches(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	state := r.URL.Query().Get("state")
	if state == "" {
		state = string(patches.Open)
	}
	limit, after, err := page(r)
	if err != nil {
		return err
	}
	reviewer := r.URL.Query().Get("reviewer")
	list, err := s.ops.ListPatches(r.Context(), actor(r), ops.ListPatches{Repo: name, State: state, Limit: limit, After: after, Reviewer: reviewer})
	if err != nil {
		return err
	}
	reviewState := map[string]string{}
	for _, p := range list {
		if len(p.Reviews) > 0 {
			reviewState[p.ID] = p.Summary.String()
		}
	}
	key, _ := reponame.Key(name)
	next := ""
	if len(list) == limit {
		next = list[len(list)-1].ID
	}
	s.render(w, r, http.StatusOK, "patches", map[string]any{
		"Title": "Patches · " + reponame.Display(key), "Repo": key, "Tab": "patches",
		"Patches": list, "State": state, "Next": next, "ReviewState": reviewState, "Reviewer": reviewer,
	})
	return nil
}

// revisionParam reads a revision number from a query parameter (0 when
// absent): what is not a number from 1 is a bad request (400), as the
// verbs' --revision.
func revisionParam(v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fault.NewField(fault.Usage, ops.FieldRevision, "bad revision %q: want a number", text.Clip(v))
	}
	return n, ops.CheckNumbered(ops.FieldRevision, n)
}

// maxRevisionCommits bounds the commits listed for a revision.
const maxRevisionCommits = 50

func (s *Server) pagePatch(w http.ResponseWriter, r *http.Request) error {
	ref, err := idRef(r)
	if err != nil {
		return err
	}
	shown, err := s.ops.ShowPatch(r.Context(), actor(r), ref)
	if err != nil {
		return err
	}
	p := shown.Patch.Patch
	key := p.Repo
	if p.ID != ref.ID {
		http.Redirect(w, r, pagePath(key, "patches", p.ID)+"?"+r.URL.RawQuery, http.StatusFound)
		return nil
	}
	q := r.URL.Query()
	if v := q.Get("to"); v != "" {
		q.Set("rev", v)
	}
	to, err := revisionParam(q.Get("rev"))
	if err != nil {
		return err
	}
	from, err := revisionParam(q.Get("from"))
	if err != nil {
		return err
	}
	if to == 0 {
		to = len(p.Revisions)
	}
	if from == to {
		from = 0
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
	rp, err := s.ops.Repo(r.Context(), actor(r), ref.Repo)
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
	for i, rv := range p.Revisions {
		l := revLink{Revision: rv, URL: self(view, 0, rv.Number), On: rv.Number == to && from == 0}
		if i < len(shown.Revisions) {
			l.Checks = shown.Revisions[i].Checks
		}
		if rv.Number > 1 {
			l.InterdiffURL = self(view, rv.Number-1, rv.Number)
		}
		revLinks = append(revLinks, l)
	}
	data["Revisions"] = revLinks
	var general, inline []patches.Review
	drafts := 0
	for _, v := range shown.Reviews {
		rv := v.Review
		if rv.Draft {
			drafts++
		}
		// An anchor names a line of its revision's tree (new side) or of
		// that revision's base (old side): both show in the revision's
		// diff, the new side only in an interdiff into it.
		old := rv.Side != nil && *rv.Side == patches.SideOld
		if rv.File != nil && rv.Line != nil && rv.Revision == to && (from == 0 || !old) {
			inline = append(inline, rv)
		} else {
			general = append(general, rv)
		}
	}
	data["Drafts"] = drafts
	// Every line number links to this page with the comment form open
	// at that line: server-rendered, no script needed.
	base := self(view, from, to)
	if strings.Contains(base, "?") {
		base += "&"
	} else {
		base += "?"
	}
	if from == 0 {
		// An interdiff's lines belong to no one revision's file.
		data["CommentBase"] = base
	}
	back := url.Values{}
	for _, k := range []string{"rev", "from", "view"} {
		if v := q.Get(k); v != "" {
			back.Set(k, v)
		}
	}
	data["Back"] = back.Encode()
	form := pageForm(r)
	if to > 0 {
		d, err := s.ops.PatchDiff(r.Context(), actor(r), ops.PatchDiff{Patch: ops.Ref{Repo: ref.Repo, ID: p.ID}, Revision: to, From: from})
		if err != nil {
			return err
		}
		res := d.Result
		rt := p.Revisions[to-1]
		data["Fetch"] = fmt.Sprintf("git fetch %s refs/collab/patches/%s/rev/%s && git checkout FETCH_HEAD", sshURL, p.ID, rt.Commit)
		code, err := s.ops.Code(r.Context(), actor(r), ref.Repo)
		if err != nil {
			return err
		}
		commits, more, err := s.browse(code.Dir).Range(r.Context(), rt.BaseCommit, rt.Commit, maxRevisionCommits)
		if err != nil {
			return fmt.Errorf("commits of patch %s revision %d: %w", p.ID, to, err)
		}
		dv := buildDiff(r.Context(), s.colour(), res, inline)
		if form.file > 0 && from == 0 {
			if path := openForm(dv.Files, form.file, form.side, form.line); path != "" {
				form.path = path
				data["Form"] = form
			}
		}
		data["Diff"] = res
		data["View2"] = dv
		data["Commits"] = commitRows(key, commits)
		data["MoreCommits"] = more
		general = append(general, dv.Rest...)
	}
	data["Reviews"] = general
	data["Below"], data["Above"] = shown.Below, shown.Above
	data["Timeline"] = shown.Timeline
	data["Summary"] = shown.Summary
	data["Submit"] = shown.Submit
	data["CanSubmit"] = p.State == patches.Open && s.ops.CanSubmit(r.Context(), actor(r), key)
	// The actions box: the author or a writer (EditPatch decides again).
	data["CanEdit"] = actor(r).Principal != "" && (actor(r).Principal == p.Author || s.ops.CanSubmit(r.Context(), actor(r), key))
	s.render(w, r, http.StatusOK, "patch", data)
	return nil
}

// revLink is a row of the revisions list with its links.
type revLink struct {
	patches.Revision
	URL, InterdiffURL string
	On                bool
	Checks            []checks.Check
}

func (s *Server) pageLeases(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	key, rows, err := s.ops.TitledLeases(r.Context(), actor(r), name)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "leases", map[string]any{
		"Title": "Leases · " + reponame.Display(key), "Repo": key, "Tab": "leases", "Leases": rows,
	})
	return nil
}

// postReview posts a review (or an inline comment with file and line)
// from the patch page's form, as the API does.
func (s *Server) postReview(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	in := ops.Review{Patch: ref, Verdict: r.PostFormValue("verdict"),
		Body: crlf(r.PostFormValue("body")), File: strings.TrimSpace(r.PostFormValue("file")),
		Side: r.PostFormValue("side"), Reply: r.PostFormValue("reply"), Draft: r.PostFormValue("draft") != ""}
	if in.Verdict == "" {
		in.Verdict = review.Comment
	}
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
	if r.PostFormValue("publish") != "" {
		// The page's Reply box: the viewer's drafts go out with it.
		out, err := s.ops.PublishDrafts(r.Context(), actor(r), ops.Publish{Patch: ref, Verdict: in.Verdict, Body: in.Body})
		if err != nil {
			return s.refusedPost(w, r, "review", err, s.pagePatch, "rev", r.PostFormValue("revision"))
		}
		target := pagePath(out.Repo, "patches", out.PatchID)
		if n := len(out.Posted); n > 0 {
			target += "?rev=" + strconv.Itoa(out.Posted[n-1].Revision) + "#r-" + out.Posted[n-1].ID
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return nil
	}
	posted, err := s.ops.Review(r.Context(), actor(r), in)
	if fe := fault.As(err); err != nil && r.PostFormValue("cf") != "" && (fe.Kind == fault.Usage || fe.Kind == fault.NotFound) {
		// A refused line comment: the page again, its form open at that
		// line with what was typed and what was wrong.
		return s.refusedForm(w, r, ref, in, fe.Msg)
	}
	if err != nil && in.Reply == "" && r.PostFormValue("cf") == "" {
		// The Reply box.
		return s.refusedPost(w, r, "review", err, s.pagePatch, "rev", r.PostFormValue("revision"))
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, pagePath(posted.Repo, "patches", posted.PatchID)+"?rev="+strconv.Itoa(posted.Review.Revision)+"#r-"+posted.Review.ID, http.StatusSeeOther)
	return nil
}

// refusedForm renders the patch page with the line comment form open
// where it was posted from, holding its text and the refusal.
func (s *Server) refusedForm(w http.ResponseWriter, r *http.Request, ref ops.Ref, in ops.Review, msg string) error {
	q := url.Values{}
	for _, k := range []string{"cf", "cs", "cl", "view"} {
		if v := r.PostFormValue(k); v != "" {
			q.Set(k, v)
		}
	}
	if in.Revision > 0 {
		q.Set("rev", strconv.Itoa(in.Revision))
	}
	g := r.Clone(r.Context())
	g.Method, g.URL.RawQuery = http.MethodGet, q.Encode()
	f := pageForm(g)
	f.Body, f.Error = in.Body, msg
	g = g.WithContext(context.WithValue(g.Context(), refusedFormKey{}, f))
	w.Header().Set("X-Collab-Refused", "1")
	return s.pagePatch(statusWriter{ResponseWriter: w, status: http.StatusUnprocessableEntity}, g)
}

// statusWriter answers with its status in place of the page's 200.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w statusWriter) WriteHeader(code int) {
	if code == http.StatusOK {
		code = w.status
	}
	w.ResponseWriter.WriteHeader(code)
}

// postResolve resolves (or, with unresolve, reopens) an inline thread
// from the patch page.
func (s *Server) postResolve(w http.ResponseWriter, r *http.Request) error {
	ref, err := s.formRef(w, r)
	if err != nil {
		return err
	}
	out, err := s.ops.ResolveThread(r.Context(), actor(r), ops.Resolve{Patch: ref, Comment: pathVar(r, "comment"), Unresolve: r.PostFormValue("unresolve") != ""})
	if err != nil {
		return err
	}
	back, _ := url.ParseQuery(r.PostFormValue("back"))
	http.Redirect(w, r, pagePath(out.Repo, "patches", out.PatchID)+"?"+back.Encode()+"#r-"+out.Thread, http.StatusSeeOther)
	return nil
}

// lineForm is the inline comment form the page opens at a line
// (?cf=FILE-N&cs=old|new&cl=LINE), with what a refused post had typed.
type lineForm struct {
	file       int
	side, path string
	line       int
	Body       string
	Error      string
}

// File, Path, Side and Line are the anchor's, for the form's hidden
// fields.
func (f lineForm) File() int    { return f.file }
func (f lineForm) Path() string { return f.path }
func (f lineForm) Side() string { return f.side }
func (f lineForm) Line() int    { return f.line }

// pageForm reads the comment form's anchor from the query; a malformed
// one opens no form.
func pageForm(r *http.Request) lineForm {
	q := r.URL.Query()
	f := lineForm{side: q.Get("cs")}
	f.file, _ = strconv.Atoi(q.Get("cf"))
	f.line, _ = strconv.Atoi(q.Get("cl"))
	if f.side != patches.SideOld {
		f.side = patches.SideNew
	}
	if f.line < 1 || f.file < 1 {
		return lineForm{}
	}
	if v, ok := r.Context().Value(refusedFormKey{}).(lineForm); ok && v.file == f.file && v.line == f.line && v.side == f.side {
		f.Body, f.Error = v.Body, v.Error
	}
	return f
}

// refusedFormKey carries a refused line comment back into the page that
// shows its form again.
type refusedFormKey struct{}
