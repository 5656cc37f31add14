package web

import (
	"context"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"github.com/sourcegraph/conc/pool"

	"github.com/collab-forge/collab/internal/browse"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/highlight"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/text"
)

// muxVar is a route variable as matched: still escaped.
func muxVar(r *http.Request, name string) string { return mux.Vars(r)[name] }

// Page lengths of the code pages.
const (
	// recentCommits is how many commits the overview lists.
	recentCommits = 20
	// commitsPage is a page of /-/commits/REF.
	commitsPage = 50
	// maxCommitsPage bounds ?page= (git walks skip commits to get there).
	maxCommitsPage = 2000
)

// escPath escapes each segment of a slash-separated path for a URL.
func escPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// codeURL is the URL of a code page (tree, blob, raw, commits) of repo at
// ref and path p ("" for the root).
func codeURL(key, kind, ref, p string) string {
	u := pagePath(key, kind, escPath(ref))
	if p != "" {
		u += "/" + escPath(p)
	}
	return u
}

// sshSetting reads the root's ssh setting, for clone and fetch commands.
func (s *Server) sshSetting(ctx context.Context) (string, error) {
	return s.ops.SSHSetting(ctx)
}

// sshCommand is how a user runs collab's SSH verbs (the login page's hint).
func (s *Server) sshCommand(ctx context.Context) string {
	v, err := s.sshSetting(ctx)
	if err != nil {
		s.cfg.Log.WarnContext(ctx, "read ssh setting", "error", err)
	}
	return forge.SSHCommand(v, s.cfg.URL)
}

// cloneURLs returns the ssh URL of repository key (from the ssh setting,
// else the web URL's host with user git) and, for a public one, the
// git:// URL git daemon serves it at (from the git_url setting, else the
// ssh host on git's default port).
func (s *Server) cloneURLs(ctx context.Context, key string, public bool) (sshURL, gitURL string, err error) {
	setting, err := s.sshSetting(ctx)
	if err != nil {
		return "", "", err
	}
	name := reponame.Display(key) + ".git"
	host := ""
	if u, err := url.Parse(s.cfg.URL); err == nil {
		host = u.Hostname()
	}
	sshURL = forge.CloneURL(setting, name)
	switch u, err := url.Parse(setting); {
	case setting == "":
		sshURL = "git@" + host + ":" + name
	case err == nil && u.Scheme == "ssh" && u.Host != "":
		host = u.Hostname()
	default:
		if _, h, ok := strings.Cut(strings.TrimSuffix(setting, ":"), "@"); ok {
			host = h
		}
	}
	if !public {
		return sshURL, "", nil
	}
	base, err := s.ops.GitURLSetting(ctx)
	switch {
	case err != nil:
		return "", "", err
	case base != "":
		gitURL = forge.GitURL(base, reponame.Display(key))
	case host != "":
		gitURL = "git://" + host + "/" + name
	}
	return sshURL, gitURL, nil
}

// codeRepo checks read access to {repo} and opens it for reading.
func (s *Server) codeRepo(r *http.Request) (string, browse.Repo, error) {
	name, err := repoName(r)
	if err != nil {
		return "", browse.Repo{}, err
	}
	c, err := s.ops.Code(r.Context(), actor(r), name)
	if err != nil {
		return "", browse.Repo{}, err
	}
	return c.Repo, s.browse(c.Dir), nil
}

// browse opens the repository in dir for the code pages, through the
// server's memo.
func (s *Server) browse(dir string) browse.Repo { return browse.Open(dir).WithMemo(s.memo) }

// refPath splits {rest} (REF[/PATH], escaped) into the ref it starts with
// and the path after it, refusing empty, "." and ".." segments.
func (s *Server) refPath(r *http.Request, g browse.Repo) (browse.Resolved, string, error) {
	raw := muxVar(r, "rest")
	raw = strings.TrimSuffix(raw, "/")
	if raw == "" {
		return browse.Resolved{}, "", notFound("branch, tag or commit")
	}
	var segs []string
	for _, e := range strings.Split(raw, "/") {
		v, err := url.PathUnescape(e)
		if err != nil || v == "" || v == "." || v == ".." || strings.ContainsAny(v, "/\x00") {
			return browse.Resolved{}, "", notFound("path")
		}
		segs = append(segs, v)
	}
	ref, rest, err := g.Resolve(r.Context(), segs)
	if err != nil {
		return browse.Resolved{}, "", err
	}
	return ref, strings.Join(rest, "/"), nil
}

// crumb is one link of a path's breadcrumbs.
type crumb struct {
	Name, URL string
}

// Of a deep path the breadcrumbs show the first crumbsHead and the last
// crumbsTail directories, "…" between: each link is as long as its path,
// so all of them would make a page quadratic in the depth.
const (
	crumbsHead = 4
	crumbsTail = 16
)

func crumbs(key, ref, p string) []crumb {
	out := []crumb{{reponame.Display(key), codeURL(key, "tree", ref, "")}}
	if p == "" {
		return out
	}
	segs := strings.Split(p, "/")
	for i := range segs {
		if len(segs) > crumbsHead+crumbsTail+1 && i >= crumbsHead && i < len(segs)-crumbsTail {
			if i == crumbsHead {
				out = append(out, crumb{Name: "…"})
			}
			continue
		}
		out = append(out, crumb{segs[i], codeURL(key, "tree", ref, strings.Join(segs[:i+1], "/"))})
	}
	return out
}

// commitRow is a commit in a list, with its links.
type commitRow struct {
	browse.Commit
	URL string // the tree at this commit
}

func commitRows(key string, cs []browse.Commit) []commitRow {
	out := make([]commitRow, len(cs))
	for i, c := range cs {
		out[i] = commitRow{Commit: c, URL: commitURL(key, c.OID)}
	}
	return out
}

// commitURL is a commit's page.
func commitURL(key, oid string) string { return repoPath(key) + "/-/commit/" + oid }

// emptyTree is git's empty tree (SHA-1): the first commit's diff is
// against it.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// pageCommit is /REPO/-/commit/OID: the message, author, committer and
// parents, and the diff against the first parent with the patch page's
// viewer and budgets.
func (s *Server) pageCommit(w http.ResponseWriter, r *http.Request) error {
	key, g, err := s.codeRepo(r)
	if err != nil {
		return err
	}
	c, err := g.CommitDetail(r.Context(), muxVar(r, "oid"))
	if err != nil {
		return err
	}
	if c.OID != muxVar(r, "oid") {
		http.Redirect(w, r, commitURL(key, c.OID)+queryOf(r), http.StatusFound)
		return nil
	}
	base := emptyTree
	if len(c.Parents) > 0 {
		base = c.Parents[0]
	}
	res, err := s.ops.CommitDiff(r.Context(), actor(r), key, base, c.OID)
	if err != nil {
		return err
	}
	view := "unified"
	if r.URL.Query().Get("view") == "split" {
		view = "split"
	}
	u := commitURL(key, c.OID)
	s.render(w, r, http.StatusOK, "commit", map[string]any{
		"Title": c.Subject + " · " + c.OID[:10] + " · " + reponame.Display(key), "Repo": key, "Tab": "code",
		"Commit": c, "TreeURL": codeURL(key, "tree", c.OID, ""),
		"Diff": res, "View2": buildDiff(r.Context(), s.colour(), res, nil), "View": view,
		"UnifiedURL": u, "SplitURL": u + "?view=split", "Wrapper": highlight.Wrapper,
	})
	return nil
}

func queryOf(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return "?" + r.URL.RawQuery
}

type branchRow struct {
	Name, URL, CommitsURL string
	Commit                commitRow
	Default               bool
	// Rule is the branch's protection in one line ("" when unprotected),
	// from Config.BranchRules.
	Rule string
}

func branchRows(key string, bs []browse.Branch, rules map[string]string) []branchRow {
	rows := make([]branchRow, 0, len(bs))
	for _, b := range bs {
		rows = append(rows, branchRow{Name: b.Name, URL: codeURL(key, "tree", b.Name, ""), CommitsURL: codeURL(key, "commits", b.Name, ""),
			Commit: commitRows(key, []browse.Commit{b.Commit})[0], Default: b.Default, Rule: rules[b.Name]})
	}
	return rows
}

// maxBranchesPage bounds ?page= of the branches list (browse.MaxRefs a
// page: past a million branches, use git).
const maxBranchesPage = 10000

// pageBranches is /REPO/-/branches: every branch, browse.MaxRefs a page
// (?page=N), the default first, then by the date of their tips.
func (s *Server) pageBranches(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	n := 1
	if v := r.URL.Query().Get("page"); v != "" {
		n, err = strconv.Atoi(v)
		if err != nil || n < 1 || n > maxBranchesPage {
			return fault.New(fault.Usage, "bad page %q: want 1 to %d", text.Clip(v), maxBranchesPage)
		}
	}
	home, err := s.ops.RepoHome(ctx, actor(r), name)
	if err != nil {
		return err
	}
	key, g := home.Repo, s.browse(home.Dir)
	bs, total, err := g.Branches(ctx, (n-1)*browse.MaxRefs, browse.MaxRefs, s.orders)
	if err != nil {
		return fmt.Errorf("branches of %s: %w", key, err)
	}
	data := map[string]any{
		"Title": "Branches · " + reponame.Display(key), "Repo": key, "Tab": "code",
		"Branches": branchRows(key, bs, home.Rules), "BranchCount": total,
		"From": (n-1)*browse.MaxRefs + 1, "To": (n-1)*browse.MaxRefs + len(bs),
	}
	base := pagePath(key, "branches")
	if n*browse.MaxRefs < total {
		data["Next"] = base + "?page=" + strconv.Itoa(n+1)
	}
	if n > 1 {
		data["Prev"] = base + "?page=" + strconv.Itoa(n-1)
	}
	s.render(w, r, http.StatusOK, "branches", data)
	return nil
}

// redirectHome sends /REPO/- to the overview.
func (s *Server) redirectHome(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	c, err := s.ops.Code(r.Context(), actor(r), name)
	if err != nil {
		return err
	}
	http.Redirect(w, r, repoPath(c.Repo), http.StatusFound)
	return nil
}

// pageRepoHome is /REPO: README, clone commands, branches, recent
// commits, and the counts of open issues and patches.
func (s *Server) pageRepoHome(w http.ResponseWriter, r *http.Request) error {
	name, err := repoName(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	home, err := s.ops.RepoHome(ctx, actor(r), name)
	if err != nil {
		return err
	}
	key, g, rp := home.Repo, s.browse(home.Dir), home.Info
	openIssues, openPatches, rules := home.OpenIssues, home.OpenPatches, home.Rules
	sshURL, gitURL, err := s.cloneURLs(ctx, key, rp.Public)
	if err != nil {
		return err
	}
	bs, total, err := g.Branches(ctx, 0, browse.MaxRefs, s.orders)
	if err != nil {
		return fmt.Errorf("branches of %s: %w", key, err)
	}
	data := map[string]any{
		"Title": reponame.Display(key), "Repo": key, "Tab": "code", "Info": rp,
		"SSHURL": sshURL, "GitURL": gitURL, "HTTPURL": forge.HTTPCloneURL(s.cfg.URL, reponame.Display(key)+".git"), "Secure": s.secure,
		"OpenIssues": openIssues, "OpenPatches": openPatches,
		"BranchCount": total, "BranchesURL": pagePath(key, "branches"),
	}
	rows := branchRows(key, bs, rules)
	var def *browse.Branch
	for i, b := range bs {
		if b.Default {
			def = &bs[i]
		}
	}
	if def == nil && len(bs) > 0 {
		def = &bs[0]
	}
	data["Branches"] = rows
	if def == nil {
		data["Empty"] = true
		s.render(w, r, http.StatusOK, "repo", data)
		return nil
	}
	data["Default"] = def.Name
	data["CommitsURL"] = codeURL(key, "commits", def.Name, "")
	data["TreeURL"] = codeURL(key, "tree", def.Name, "")
	// The log and the README are read side by side: each is a git
	// process or two when not remembered, and a process start is most
	// of a read's cost.
	var (
		cs         []browse.Commit
		more       bool
		readmeName string
		readme     template.HTML
	)
	p := pool.New().WithErrors().WithContext(ctx)
	p.Go(func(ctx context.Context) error {
		var err error
		if cs, more, err = g.Log(ctx, def.Commit.OID, 0, recentCommits); err != nil {
			return fmt.Errorf("log of %s: %w", key, err)
		}
		return nil
	})
	p.Go(func(ctx context.Context) error {
		// ls-tree lists a commit's root tree itself.
		es, _, err := g.Tree(ctx, def.Commit.OID, browse.MaxEntries)
		if err != nil {
			return err
		}
		if e, ok := browse.Readme(es); ok {
			readmeName = e.Name
			readme, err = s.readme(ctx, key, g, e)
		}
		return err
	})
	if err := p.Wait(); err != nil {
		return err
	}
	data["Commits"], data["MoreCommits"] = commitRows(key, cs), more
	if readmeName != "" {
		data["ReadmeName"], data["Readme"] = readmeName, readme
	}
	s.render(w, r, http.StatusOK, "repo", data)
	return nil
}

// readme renders a README entry: Markdown through the same sanitiser as
// every body, anything else as text; over browse.MaxReadme it is only
// named.
func (s *Server) readme(ctx context.Context, key string, g browse.Repo, e browse.Entry) (template.HTML, error) {
	b, err := g.ReadBlob(ctx, e.OID, e.Size, browse.MaxReadme)
	if err != nil {
		return "", err
	}
	switch {
	case b.TooLarge || b.Binary:
		return template.HTML(`<p class="muted">` + template.HTMLEscapeString(e.Name) + ` is too large or not text to show here.</p>`), nil //nolint:gosec // escaped
	case browse.IsMarkdown(e.Name):
		return s.md.Cached(key, "blob:"+e.OID, string(b.Data)), nil
	}
	return template.HTML("<pre class=\"readme\">" + template.HTMLEscapeString(string(b.Data)) + "</pre>"), nil //nolint:gosec // escaped
}

type treeRow struct {
	browse.Entry
	URL string // "" for a submodule
}

// toDefaultBranch answers a code URL without a ref (/REPO/-/tree,
// /REPO/-/commits) with the same view of the default branch.
func toDefaultBranch(w http.ResponseWriter, r *http.Request, g browse.Repo, key, kind string) error {
	def, err := g.DefaultBranch(r.Context())
	if err != nil {
		return err
	}
	if def == "" {
		return notFound("branch")
	}
	http.Redirect(w, r, codeURL(key, kind, def, ""), http.StatusFound)
	return nil
}

// pageTree lists a directory at a ref.
func (s *Server) pageTree(w http.ResponseWriter, r *http.Request) error {
	key, g, err := s.codeRepo(r)
	if err != nil {
		return err
	}
	if muxVar(r, "rest") == "" {
		return toDefaultBranch(w, r, g, key, "tree")
	}
	ref, p, err := s.refPath(r, g)
	if err != nil {
		return err
	}
	obj, err := g.Stat(r.Context(), ref.Commit, p)
	if err != nil {
		return err
	}
	if obj.Type == "blob" {
		http.Redirect(w, r, codeURL(key, "blob", ref.Name, p), http.StatusFound)
		return nil
	}
	if obj.Type != "tree" {
		return notFound("directory")
	}
	es, more, err := g.Tree(r.Context(), obj.OID, browse.MaxEntries)
	if err != nil {
		return err
	}
	rows := make([]treeRow, len(es))
	for i, e := range es {
		rows[i] = treeRow{Entry: e}
		switch e.Type {
		case "tree":
			rows[i].URL = codeURL(key, "tree", ref.Name, path.Join(p, e.Name))
		case "blob":
			rows[i].URL = codeURL(key, "blob", ref.Name, path.Join(p, e.Name))
		}
	}
	data := map[string]any{
		"Title": path.Join(reponame.Display(key), p) + " · " + ref.Name, "Repo": key, "Tab": "code",
		"Ref": ref, "Path": p, "Crumbs": crumbs(key, ref.Name, p), "Entries": rows, "More": more,
		"CommitsURL": codeURL(key, "commits", ref.Name, ""),
	}
	if p != "" {
		data["Up"] = codeURL(key, "tree", ref.Name, path.Dir("/" + p)[1:])
	}
	if readme, ok := browse.Readme(es); ok {
		data["ReadmeName"] = readme.Name
		if data["Readme"], err = s.readme(r.Context(), key, g, readme); err != nil {
			return err
		}
	}
	s.render(w, r, http.StatusOK, "tree", data)
	return nil
}

// pageBlob shows a file at a ref: highlighted, with line anchors (#L12)
// and a raw link; a binary or over-size file is described, not shown.
func (s *Server) pageBlob(w http.ResponseWriter, r *http.Request) error {
	key, g, err := s.codeRepo(r)
	if err != nil {
		return err
	}
	ref, p, err := s.refPath(r, g)
	if err != nil {
		return err
	}
	if p == "" {
		http.Redirect(w, r, codeURL(key, "tree", ref.Name, ""), http.StatusFound)
		return nil
	}
	obj, err := g.Stat(r.Context(), ref.Commit, p)
	if err != nil {
		return err
	}
	if obj.Type == "tree" {
		http.Redirect(w, r, codeURL(key, "tree", ref.Name, p), http.StatusFound)
		return nil
	}
	if obj.Type != "blob" {
		return notFound("file")
	}
	b, err := g.ReadBlob(r.Context(), obj.OID, obj.Size, browse.MaxBlob)
	if err != nil {
		return err
	}
	data := map[string]any{
		"Title": path.Join(reponame.Display(key), p) + " · " + ref.Name, "Repo": key, "Tab": "code",
		"Ref": ref, "Path": p, "Crumbs": crumbs(key, ref.Name, p), "Blob": b, "Size": size(obj.Size),
		"RawURL": codeURL(key, "raw", ref.Name, p), "RawOK": obj.Size <= browse.MaxRaw, "MaxBlob": size(browse.MaxBlob),
		"CommitsURL": codeURL(key, "commits", ref.Name, ""),
	}
	if !b.Binary && !b.TooLarge {
		data["Code"], data["Lines"], data["Plain"] = s.blobTable(r.Context(), p, b)
		data["Wrapper"] = highlight.Wrapper
	}
	s.render(w, r, http.StatusOK, "blob", data)
	return nil
}

func (s *Server) colour() colourer { return colourer{hl: s.hl, cache: s.code} }

// blobTable is the blob page's table of numbered, coloured lines, made
// here rather than by the template (a 1 MiB file has tens of thousands of
// lines) and remembered by blob id and name (the lexer follows the name);
// plain says the file was too large to colour.
func (s *Server) blobTable(ctx context.Context, name string, b browse.Blob) (table template.HTML, lines int, plain bool) {
	plain = len(b.Data) > highlight.MaxBytes
	lines = strings.Count(string(b.Data), "\n")
	if len(b.Data) > 0 && b.Data[len(b.Data)-1] != '\n' {
		lines++
	}
	k := "blob\x00" + b.OID + "\x00" + path.Base(name)
	table = s.code.Do(k, func() (template.HTML, int64, bool) {
		var ls []template.HTML
		if plain {
			ls = highlight.Plain(string(b.Data))
		} else {
			ls = s.hl.Lines(ctx, path.Base(name), string(b.Data))
		}
		var sb strings.Builder
		sb.Grow(len(b.Data) * 2)
		for i, l := range ls {
			n := strconv.Itoa(i + 1)
			sb.WriteString(`<tr id="L` + n + `"><td class="ln"><a href="#L` + n + `">` + n + `</a></td><td class="src"><pre>`)
			sb.WriteString(string(l))
			sb.WriteString("</pre></td></tr>\n")
		}
		t := template.HTML(sb.String()) //nolint:gosec // numbers and highlight's escaped lines
		return t, int64(len(t) + len(k)), ctx.Err() == nil
	})
	return table, lines, plain
}

// pageRaw serves a file's bytes: text as text/plain (never HTML, whatever
// it holds; nosniff and the CSP apply), anything else as a download.
func (s *Server) pageRaw(w http.ResponseWriter, r *http.Request) error {
	_, g, err := s.codeRepo(r)
	if err != nil {
		return err
	}
	ref, p, err := s.refPath(r, g)
	if err != nil {
		return err
	}
	obj, err := g.Stat(r.Context(), ref.Commit, p)
	if err != nil {
		return err
	}
	if obj.Type != "blob" {
		return notFound("file")
	}
	if obj.Size > browse.MaxRaw {
		return errTooLarge("this file", browse.MaxRaw)
	}
	head, err := g.ReadBlob(r.Context(), obj.OID, obj.Size, 0)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Length", strconv.FormatInt(obj.Size, 10))
	h.Set("Cache-Control", "private, max-age=60")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	if head.Binary {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(p)}))
	} else {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	if err := g.CopyBlob(r.Context(), w, obj.OID, browse.MaxRaw); err != nil {
		// The status is sent; all that is left is to log and cut the body.
		s.cfg.Log.WarnContext(r.Context(), "raw file cut short", "path", r.URL.EscapedPath(), "error", err.Error())
		panic(http.ErrAbortHandler)
	}
	return nil
}

// pageCommits lists the history of a ref, newest first, commitsPage a
// page (?page=N).
func (s *Server) pageCommits(w http.ResponseWriter, r *http.Request) error {
	key, g, err := s.codeRepo(r)
	if err != nil {
		return err
	}
	if muxVar(r, "rest") == "" {
		return toDefaultBranch(w, r, g, key, "commits")
	}
	ref, p, err := s.refPath(r, g)
	if err != nil {
		return err
	}
	if p != "" {
		return notFound("page")
	}
	n := 1
	if v := r.URL.Query().Get("page"); v != "" {
		n, err = strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCommitsPage {
			return fault.New(fault.Usage, "bad page %q: want 1 to %d", text.Clip(v), maxCommitsPage)
		}
	}
	cs, more, err := g.Log(r.Context(), ref.Commit, (n-1)*commitsPage, commitsPage)
	if err != nil {
		return err
	}
	data := map[string]any{
		"Title": "Commits · " + ref.Name + " · " + reponame.Display(key), "Repo": key, "Tab": "code",
		"Ref": ref, "Commits": commitRows(key, cs), "TreeURL": codeURL(key, "tree", ref.Name, ""),
	}
	base := codeURL(key, "commits", ref.Name, "")
	if more {
		data["Next"] = base + "?page=" + strconv.Itoa(n+1)
	}
	if n > 1 {
		data["Prev"] = base + "?page=" + strconv.Itoa(n-1)
	}
	s.render(w, r, http.StatusOK, "commits", data)
	return nil
}

// size shows a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
