// Package browse reads a repository's content for the web's code pages
// (overview, tree, blob, commits, a revision's commits) through stock git.
//
// Every read has a budget: a number of entries or bytes past which git is
// stopped (git.Repo.Copy) and the caller told that the answer is cut, so
// that no repository content, however large, costs more than a page's
// worth of memory and time. User values reach git only as full object ids,
// as ref names checked here and prefixed with refs/heads/ or refs/tags/, or
// as paths on stdin; never as options.
package browse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
)

// Budgets of the reads.
const (
	// MaxBlob is the largest file shown on a blob page; larger ones are
	// described, not read.
	MaxBlob = 1 << 20
	// MaxRaw is the largest file served raw.
	MaxRaw = 64 << 20
	// MaxEntries bounds a tree listing.
	MaxEntries = 2000
	// MaxRefs bounds the branches listed on a page: the overview's and
	// each of the branches list's.
	MaxRefs = 100
	// maxSubjectCols is where lists cut a commit's subject ("..").
	maxSubjectCols = "200"
	// maxListing bounds the bytes of a listing git prints (trees, refs, logs).
	maxListing = 4 << 20
	// maxMessages bounds the commit messages of one revision's list.
	maxMessages = 1 << 20
	// MaxReadme bounds the README shown on the overview.
	MaxReadme = 512 << 10
)

// Repo is a bare repository read for the pages.
type Repo struct {
	git  git.Repo
	memo *Memo
}

// Open returns the repository in dir (a bare repository's path).
func Open(dir string) Repo { return Repo{git: git.Open(dir)} }

// Branch is a branch and its tip.
type Branch struct {
	Name    string
	Commit  Commit
	Default bool
}

// Commit is a commit as the pages show it.
type Commit struct {
	OID         string
	Parents     []string
	Author      string
	AuthorEmail string
	When        string // author date, RFC 3339
	Subject     string
	// Body is the message after the subject line (only where asked for).
	Body string
}

// Short is the commit id abbreviated as pages show it.
func (c Commit) Short() string { return c.OID[:min(len(c.OID), 10)] }

const (
	fieldSep = "\x1f"
	// logFormat's subject is cut at MaxSubject columns by git itself (a
	// message's first paragraph may be a megabyte long).
	logFormat = "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%<(" + maxSubjectCols + ",trunc)%s"
	msgFormat = "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%b"
)

func parseCommit(rec string, full bool) (Commit, bool) {
	n := 6
	if full {
		n = 7
	}
	f := strings.SplitN(strings.TrimLeft(rec, "\n"), fieldSep, n)
	if len(f) != n || !git.IsOID(f[0]) {
		return Commit{}, false
	}
	// The subject is padded to its cut's width.
	c := Commit{OID: f[0], Parents: strings.Fields(f[1]), Author: f[2], AuthorEmail: f[3], When: f[4], Subject: strings.TrimRight(f[5], " ")}
	if full {
		c.Body = strings.TrimRight(f[6], "\n")
	}
	return c, true
}

// DefaultBranch is the branch HEAD names ("" when HEAD is not a branch).
func (r Repo) DefaultBranch(ctx context.Context) (string, error) {
	out, _, err := r.git.Output(ctx, 4096, nil, "symbolic-ref", "--quiet", "HEAD")
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.Code == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "refs/heads/"), nil
}

// Branches lists a page of the branches: the default first, then the
// others by the committer date of their tips, newest first; skip of them
// are left out and at most n returned; total is how many there are.
//
// One listing of names and ids (no commit read) and one git log of the
// tips sorted by date: git for-each-ref --sort=-committerdate reads every
// tip's commit through its formatting code, which on 10,000 branches costs
// several times the whole overview. Where orders is given and the
// repository has more than orderMin branches, the order is remembered
// while git.RefsStamp says the branches are unchanged, and a page then
// reads only its own commits.
func (r Repo) Branches(ctx context.Context, skip, n int, orders *Orders) ([]Branch, int, error) {
	k, ok := r.refsKey()
	if !ok {
		return r.branches(ctx, skip, n, orders)
	}
	p, err := remember(r, keyOf("branches", k, skip, n), func(p branchPageOf) int64 {
		var size int64
		for _, b := range p.bs {
			size += int64(len(b.Name)) + commitSize(b.Commit)
		}
		return size
	}, func() (branchPageOf, error) {
		bs, total, err := r.branches(ctx, skip, n, orders)
		return branchPageOf{bs, total}, err
	})
	return p.bs, p.total, err
}

// branchPageOf is a page of Branches and the count of all branches.
type branchPageOf struct {
	bs    []Branch
	total int
}

// branches is Branches without the memo.
func (r Repo) branches(ctx context.Context, skip, n int, orders *Orders) (bs []Branch, total int, err error) {
	stamp, stampOK := "", false
	if orders != nil {
		stamp, stampOK = git.RefsStamp(r.git.Dir, orders.now())
		if o, ok := orders.get(r.git.Dir, stamp); ok && stampOK {
			return r.branchPage(ctx, o, skip, n)
		}
	}
	out, _, err := r.git.Output(ctx, maxListing, nil, "for-each-ref", "--format=%(HEAD)%(objectname) %(refname:strip=2)", "refs/heads/")
	if err != nil {
		return nil, 0, err
	}
	var o order
	names := map[string][]string{} // by tip, in name order
	var tips []string
	for _, line := range strings.Split(string(out), "\n") {
		if len(line) < 2 {
			continue
		}
		head := line[0] == '*'
		oid, name, ok := strings.Cut(line[1:], " ")
		if !ok || !git.IsOID(oid) || name == "" {
			continue
		}
		o.total++
		if head {
			o.def, o.defOID = name, oid
			continue
		}
		if names[oid] == nil {
			tips = append(tips, oid)
		}
		names[oid] = append(names[oid], name)
	}
	if orders != nil && stampOK && o.total > orderMin {
		// The whole order, once: later pages and views read no listing.
		sorted, _, err := r.git.Output(ctx, int64(len(tips))*41+4096, strings.NewReader(strings.Join(tips, "\n")+"\n"),
			"log", "--format=%H", "--no-walk=sorted", "--stdin")
		if err != nil {
			return nil, 0, err
		}
		for _, oid := range strings.Fields(string(sorted)) {
			for _, name := range names[oid] {
				o.names, o.oids = append(o.names, name), append(o.oids, oid)
			}
		}
		orders.put(r.git.Dir, stamp, o)
		return r.branchPage(ctx, o, skip, n)
	}
	if o.def != "" {
		if skip == 0 {
			c, err := r.commits(ctx, 0, o.defOID)
			if err != nil {
				return nil, 0, err
			}
			if len(c) == 1 {
				bs = append(bs, Branch{Name: o.def, Commit: c[0], Default: true})
				n--
			}
		} else {
			skip--
		}
	}
	if n <= 0 || len(tips) == 0 {
		return bs, o.total, nil
	}
	// The page's branches lie among the first skip+n tips by date.
	cs, err := r.commits(ctx, skip+n, tips...)
	if err != nil {
		return nil, 0, err
	}
	i := 0
	for _, c := range cs {
		for _, name := range names[c.OID] {
			if i >= skip && i < skip+n {
				bs = append(bs, Branch{Name: name, Commit: c})
			}
			i++
		}
	}
	return bs, o.total, nil
}

// branchPage is a page of Branches from a remembered order: only the
// page's commits are read.
func (r Repo) branchPage(ctx context.Context, o order, skip, n int) ([]Branch, int, error) {
	type entry struct {
		name, oid string
		def       bool
	}
	var page []entry
	if o.def != "" {
		if skip == 0 {
			page = append(page, entry{o.def, o.defOID, true})
			n--
		} else {
			skip--
		}
	}
	for i := skip; i < len(o.names) && i < skip+n; i++ {
		page = append(page, entry{o.names[i], o.oids[i], false})
	}
	if len(page) == 0 {
		return nil, o.total, nil
	}
	var oids []string
	seen := map[string]bool{}
	for _, e := range page {
		if !seen[e.oid] {
			seen[e.oid] = true
			oids = append(oids, e.oid)
		}
	}
	cs, err := r.commits(ctx, 0, oids...)
	if err != nil {
		return nil, 0, err
	}
	byOID := map[string]Commit{}
	for _, c := range cs {
		byOID[c.OID] = c
	}
	var bs []Branch
	for _, e := range page {
		if c, ok := byOID[e.oid]; ok {
			bs = append(bs, Branch{Name: e.name, Commit: c, Default: e.def})
		}
	}
	return bs, o.total, nil
}

// OrderOffVar, set to "off" in collab-web's environment, turns off
// remembering the branch order (Orders): every view of a repository's
// branches then lists and sorts them all. bench/pages measures both in
// one run: the overview of 10,000 branches against one of 10, CPU per
// request, 1.08x and 1.04x remembered, 6.16x and 6.02x sorted at every
// view (two runs of 60 rounds on a 2-core machine).
const OrderOffVar = "COLLAB_BRANCH_ORDER"

// orderMin is how many branches a repository needs for Branches to
// remember their order: fewer cost less to sort than to remember.
const orderMin = MaxRefs

// maxOrders bounds the repositories whose order is remembered.
const maxOrders = 64

// order is a repository's branches in Branches' order: the default, then
// the others by date.
type order struct {
	total       int
	def, defOID string
	names, oids []string
}

// Orders remembers the order of the branches of the repositories with
// many (Branches), each under its git.RefsStamp; safe for concurrent use.
type Orders struct {
	mu sync.Mutex
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	m   map[string]stamped
}

type stamped struct {
	stamp string
	o     order
}

func (c *Orders) now() time.Time {
	if c.Now == nil {
		return time.Now()
	}
	return c.Now()
}

func (c *Orders) get(dir, stamp string) (order, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[dir]
	return e.o, ok && e.stamp == stamp
}

func (c *Orders) put(dir, stamp string, o order) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]stamped{}
	}
	if _, ok := c.m[dir]; !ok && len(c.m) >= maxOrders {
		for k := range c.m { // any one: the map stays bounded
			delete(c.m, k)
			break
		}
	}
	c.m[dir] = stamped{stamp, o}
}

// commits reads the commits oids (full ids) as logFormat shows them: the
// first max by committer date, newest first, or (max 0) all in their order.
func (r Repo) commits(ctx context.Context, max int, oids ...string) ([]Commit, error) {
	if len(oids) > 2*MaxRefs {
		return r.readCommits(ctx, max, oids...)
	}
	return remember(r, keyOf("commits", max, strings.Join(oids, " ")), commitsSize, func() ([]Commit, error) {
		return r.readCommits(ctx, max, oids...)
	})
}

// readCommits is commits without the memo.
func (r Repo) readCommits(ctx context.Context, max int, oids ...string) ([]Commit, error) {
	args := []string{"log", "-z", logFormat, "--no-walk=unsorted", "--stdin"}
	if max > 0 {
		args = []string{"log", "-z", logFormat, "--no-walk=sorted", "--max-count=" + strconv.Itoa(max), "--stdin"}
	}
	in := strings.Join(oids, "\n") + "\n"
	out, _, err := r.git.Output(ctx, maxListing, strings.NewReader(in), args...)
	if err != nil {
		return nil, err
	}
	var cs []Commit
	for _, rec := range strings.Split(string(out), "\x00") {
		if c, ok := parseCommit(rec, false); ok {
			cs = append(cs, c)
		}
	}
	return cs, nil
}

// Log returns up to n commits reachable from commit (a full id), newest
// first, after skipping skip; more says there are others after them.
func (r Repo) Log(ctx context.Context, commit string, skip, n int) ([]Commit, bool, error) {
	p, err := remember(r, keyOf("log", commit, skip, n), func(p logPage) int64 { return commitsSize(p.cs) }, func() (logPage, error) {
		cs, more, err := r.log(ctx, commit, skip, n)
		return logPage{cs, more}, err
	})
	return p.cs, p.more, err
}

// logPage is a page of commits and whether others follow.
type logPage struct {
	cs   []Commit
	more bool
}

// log is Log without the memo.
func (r Repo) log(ctx context.Context, commit string, skip, n int) (cs []Commit, more bool, err error) {
	if !git.IsOID(commit) {
		return nil, false, fmt.Errorf("log %q: not an object id", commit)
	}
	out, _, err := r.git.Output(ctx, maxListing, nil, "log", "-z", logFormat, "--skip="+strconv.Itoa(skip),
		"--max-count="+strconv.Itoa(n+1), commit, "--")
	if err != nil {
		return nil, false, err
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		if c, ok := parseCommit(rec, false); ok {
			cs = append(cs, c)
		}
	}
	if len(cs) > n {
		return cs[:n], true, nil
	}
	return cs, false, nil
}

// Detail is one commit in full, for its page.
type Detail struct {
	Commit
	Committer, CommitterEmail, CommitterWhen string
	// Message is the whole message, subject included.
	Message string
}

// detailFormat is msgFormat's fields with the committer's, then the raw
// message (%B).
const detailFormat = "--format=%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%cn%x1f%ce%x1f%cI%x1f%B"

// CommitDetail reads the commit id names (a full or abbreviated id, 4 to
// 64 hex digits); one that is not a commit here is fault.NotFound.
func (r Repo) CommitDetail(ctx context.Context, id string) (Detail, error) {
	if !git.IsOID(id) {
		// An abbreviated id may name another commit once more objects
		// share its digits.
		return r.commitDetail(ctx, id)
	}
	return remember(r, keyOf("detail", id), func(d Detail) int64 {
		return commitSize(d.Commit) + int64(len(d.Committer)+len(d.CommitterEmail)+len(d.CommitterWhen)+len(d.Message))
	}, func() (Detail, error) { return r.commitDetail(ctx, id) })
}

// commitDetail is CommitDetail without the memo.
func (r Repo) commitDetail(ctx context.Context, id string) (Detail, error) {
	if len(id) < 4 || len(id) > 64 || !isHex(id) {
		return Detail{}, fault.New(fault.NotFound, "no such commit: want 4 to 64 hex digits")
	}
	out, _, err := r.git.Output(ctx, maxMessages, nil, "log", "-1", "--no-walk", detailFormat, id+"^{commit}", "--")
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.Code == 128 {
			return Detail{}, fault.New(fault.NotFound, "no commit %s", id)
		}
		return Detail{}, err
	}
	f := strings.SplitN(string(out), fieldSep, 10)
	if len(f) != 10 || !git.IsOID(f[0]) {
		return Detail{}, fault.New(fault.NotFound, "no commit %s", id)
	}
	return Detail{
		Commit:    Commit{OID: f[0], Parents: strings.Fields(f[1]), Author: f[2], AuthorEmail: f[3], When: f[4], Subject: f[5]},
		Committer: f[6], CommitterEmail: f[7], CommitterWhen: f[8], Message: strings.TrimRight(f[9], "\n"),
	}, nil
}

// Range returns the commits of base..tip (full ids) with their messages,
// oldest first, at most max of them; more says some were left out (the
// newest ones are kept, as the tip is what a reviewer looks at).
func (r Repo) Range(ctx context.Context, base, tip string, max int) ([]Commit, bool, error) {
	p, err := remember(r, keyOf("range", base, tip, max), func(p logPage) int64 { return commitsSize(p.cs) }, func() (logPage, error) {
		cs, more, err := r.readRange(ctx, base, tip, max)
		return logPage{cs, more}, err
	})
	return p.cs, p.more, err
}

// readRange is Range without the memo.
func (r Repo) readRange(ctx context.Context, base, tip string, max int) (cs []Commit, more bool, err error) {
	if !git.IsOID(base) || !git.IsOID(tip) {
		return nil, false, fmt.Errorf("log %q..%q: not object ids", base, tip)
	}
	out, cut, err := r.git.Output(ctx, maxMessages, nil, "log", "-z", msgFormat, "--max-count="+strconv.Itoa(max+1), tip, "^"+base, "--")
	if err != nil {
		return nil, false, err
	}
	for _, rec := range strings.Split(string(out), "\x00") {
		if c, ok := parseCommit(rec, true); ok {
			cs = append(cs, c)
		}
	}
	if cut && len(cs) > 0 {
		cs = cs[:len(cs)-1] // the last record may be cut short
		more = true
	}
	if len(cs) > max {
		cs, more = cs[:max], true
	}
	for i, j := 0, len(cs)-1; i < j; i, j = i+1, j-1 {
		cs[i], cs[j] = cs[j], cs[i]
	}
	return cs, more, nil
}

// Resolved is a ref named in a page URL and the commit it points to.
type Resolved struct {
	Name   string // as named: a branch, a tag or a commit id
	Commit string
	// Kind is "branch", "tag" or "commit".
	Kind string
}

// resolveDirect is how many leading segments of a page's path Resolve
// asks git about all at once; a deeper path first lists the refs under its
// first segment, so that a URL thousands of segments deep costs one short
// listing, not thousands of lookups of ever longer names.
const resolveDirect = 16

// Resolve finds the ref at the start of segs (a branch or tag, whose name
// may hold slashes, the longest that exists winning; else a commit id of 4
// to 64 hex digits) and returns it with the remaining segments (a path).
// Nothing that matches is fault.NotFound.
func (r Repo) Resolve(ctx context.Context, segs []string) (Resolved, []string, error) {
	k, ok := r.refsKey()
	if !ok || len(segs) > 0 && isHex(segs[0]) && len(segs[0]) < 40 {
		// An abbreviated id may name another commit once more objects
		// share its digits.
		return r.resolve(ctx, segs)
	}
	p, err := remember(r, keyOf("resolve", k, strings.Join(segs, "/")), func(p resolvedPath) int64 {
		return int64(len(p.res.Name) + len(p.res.Commit) + len(strings.Join(p.rest, "/")))
	}, func() (resolvedPath, error) {
		res, rest, err := r.resolve(ctx, segs)
		return resolvedPath{res, rest}, err
	})
	return p.res, p.rest, err
}

// resolvedPath is what Resolve returns.
type resolvedPath struct {
	res  Resolved
	rest []string
}

// resolve is Resolve without the memo.
func (r Repo) resolve(ctx context.Context, segs []string) (Resolved, []string, error) {
	type cand struct {
		res  Resolved
		rest []string
	}
	var cands []cand
	var in strings.Builder
	add := func(i int, name string) {
		if !validRefName(name) {
			return
		}
		for _, k := range []string{"branch", "tag"} {
			full := "refs/heads/" + name
			if k == "tag" {
				full = "refs/tags/" + name
			}
			cands = append(cands, cand{Resolved{Name: name, Kind: k}, segs[i:]})
			in.WriteString(full + "^{commit}\n")
		}
	}
	if len(segs) <= resolveDirect {
		for i := len(segs); i >= 1; i-- {
			add(i, strings.Join(segs[:i], "/"))
		}
	} else {
		refs, err := r.refsAt(ctx, segs)
		if err != nil {
			return Resolved{}, nil, err
		}
		// The listing names the commits of branches and of tags of
		// commits: the longest wins without asking git again.
		if len(refs) > 0 && refs[0].commit != "" {
			ref := refs[0]
			return Resolved{Name: strings.Join(segs[:ref.n], "/"), Kind: ref.kind, Commit: ref.commit}, segs[ref.n:], nil
		}
		for _, ref := range refs {
			add(ref.n, strings.Join(segs[:ref.n], "/"))
		}
	}
	if len(segs) > 0 && isHex(segs[0]) && len(segs[0]) >= 4 && len(segs[0]) <= 64 {
		cands = append(cands, cand{Resolved{Name: segs[0], Kind: "commit"}, segs[1:]})
		in.WriteString(segs[0] + "^{commit}\n")
	}
	if len(cands) == 0 {
		return Resolved{}, nil, fault.New(fault.NotFound, "no such branch, tag or commit")
	}
	// git echoes a missing name in full: the answer is as long as the
	// question, and a cut answer would lose the shortest name, the last.
	out, _, err := r.git.Output(ctx, int64(in.Len())+int64(len(cands))*200+4096, strings.NewReader(in.String()),
		"cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return Resolved{}, nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, c := range cands {
		if i >= len(lines) {
			break
		}
		f := strings.Fields(lines[i])
		if len(f) == 2 && f[1] == "commit" && git.IsOID(f[0]) {
			c.res.Commit = f[0]
			return c.res, c.rest, nil
		}
	}
	return Resolved{}, nil, fault.New(fault.NotFound, "no such branch, tag or commit")
}

// atRef is a branch or tag naming the first n segments of a path, and its
// commit where the listing says it ("" for a tag of a tag or of a tree).
type atRef struct {
	n      int
	kind   string
	commit string
}

// refsAt lists the branches and tags under segs' first segment and
// returns those that name segs' first segments: longest first, a branch
// before a tag of the same name, as Resolve tries them.
func (r Repo) refsAt(ctx context.Context, segs []string) ([]atRef, error) {
	if !validRefName(segs[0]) {
		return nil, nil
	}
	out, _, err := r.git.Output(ctx, maxListing, nil, "for-each-ref",
		"--format=%(refname)%1f%(objecttype)%1f%(objectname)%1f%(*objecttype)%1f%(*objectname)",
		"refs/heads/"+segs[0], "refs/tags/"+segs[0])
	if err != nil {
		return nil, err
	}
	var refs []atRef
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Split(line, fieldSep)
		if len(f) != 5 {
			continue
		}
		ref := atRef{kind: "branch"}
		name, ok := strings.CutPrefix(f[0], "refs/heads/")
		if !ok {
			if name, ok = strings.CutPrefix(f[0], "refs/tags/"); !ok {
				continue
			}
			ref.kind = "tag"
		}
		switch {
		case f[1] == "commit" && git.IsOID(f[2]):
			ref.commit = f[2]
		case f[1] == "tag" && f[3] == "commit" && git.IsOID(f[4]):
			ref.commit = f[4]
		}
		// name counts when its segments are segs' first ones.
		parts := strings.Split(name, "/")
		if len(parts) > len(segs) {
			continue
		}
		match := true
		for i, p := range parts {
			if p != segs[i] {
				match = false
				break
			}
		}
		if match {
			ref.n = len(parts)
			refs = append(refs, ref)
		}
	}
	sort.SliceStable(refs, func(i, j int) bool {
		if refs[i].n != refs[j].n {
			return refs[i].n > refs[j].n
		}
		return refs[i].kind == "branch" && refs[j].kind == "tag"
	})
	return refs, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// validRefName is git check-ref-format's rule for a branch or tag name
// (without refs/heads/), checked here so that no name can turn into a
// revision expression (^, ~, :, @{) or an option.
func validRefName(name string) bool {
	if name == "" || name == "@" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, ".") ||
		strings.Contains(name, "..") || strings.Contains(name, "@{") || strings.Contains(name, "//") {
		return false
	}
	for _, c := range []byte(name) {
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return false
		}
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") || strings.HasSuffix(seg, ".lock") {
			return false
		}
	}
	return true
}

// Object is what a path names in a commit's tree.
type Object struct {
	OID  string
	Type string // blob, tree, commit (a submodule)
	Size int64
}

// Stat finds path (cleaned, relative to the root; "" for the root) in
// commit's tree; a missing path is fault.NotFound.
func (r Repo) Stat(ctx context.Context, commit, p string) (Object, error) {
	return remember(r, keyOf("stat", commit, p), func(o Object) int64 { return int64(len(o.OID) + len(o.Type)) }, func() (Object, error) {
		return r.stat(ctx, commit, p, true)
	})
}

// stat is Stat; submodules says whether to look for a submodule entry in
// the parent of a path git calls missing (once: a missing parent is no
// submodule, and looking further up would run git once per segment).
func (r Repo) stat(ctx context.Context, commit, p string, submodules bool) (Object, error) {
	if !git.IsOID(commit) {
		return Object{}, fmt.Errorf("stat %q: not an object id", commit)
	}
	if strings.ContainsAny(p, "\n\x00") {
		return Object{}, fault.New(fault.NotFound, "no such path")
	}
	// "OID:path" on stdin: the path is never parsed as an option, and
	// (not starting with ./ or ../, cleaned) is read literally.
	spec := commit + "^{tree}"
	if p != "" {
		spec = commit + ":" + p
	}
	out, _, err := r.git.Output(ctx, 4096, strings.NewReader(spec+"\n"), "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)")
	if err != nil {
		return Object{}, err
	}
	f := strings.Fields(string(out))
	if len(f) != 3 || !git.IsOID(f[0]) {
		// A submodule entry is not an object of this repository: git
		// says "missing"; look at the parent tree's entry instead.
		if p != "" && submodules {
			if e, ok, err := r.entry(ctx, commit, p); err != nil {
				return Object{}, err
			} else if ok {
				return Object{OID: e.OID, Type: e.Type}, nil
			}
		}
		return Object{}, fault.New(fault.NotFound, "no such path")
	}
	size, _ := strconv.ParseInt(f[2], 10, 64)
	return Object{OID: f[0], Type: f[1], Size: size}, nil
}

// entry reads the tree entry of p from its parent directory's listing.
func (r Repo) entry(ctx context.Context, commit, p string) (Entry, bool, error) {
	dir := path.Dir(p)
	if dir == "." {
		dir = ""
	}
	parent, err := r.stat(ctx, commit, dir, false)
	if err != nil || parent.Type != "tree" {
		return Entry{}, false, nil
	}
	es, _, err := r.Tree(ctx, parent.OID, MaxEntries)
	if err != nil {
		return Entry{}, false, err
	}
	for _, e := range es {
		if e.Name == path.Base(p) {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// Entry is one entry of a tree listing.
type Entry struct {
	Mode string
	Type string // blob, tree, commit
	OID  string
	Name string
	Size int64 // -1 for trees and submodules
}

// Dir reports whether the entry is a directory.
func (e Entry) Dir() bool { return e.Type == "tree" }

// Tree lists tree (the full id of a tree, or of a commit for its root
// tree): directories first, then by name; at most max entries, more set
// when some were left out.
func (r Repo) Tree(ctx context.Context, tree string, max int) ([]Entry, bool, error) {
	p, err := remember(r, keyOf("tree", tree, max), func(p treePage) int64 {
		var size int64
		for _, e := range p.es {
			size += int64(len(e.Mode)+len(e.Type)+len(e.OID)+len(e.Name)) + 64
		}
		return size
	}, func() (treePage, error) {
		es, more, err := r.tree(ctx, tree, max)
		return treePage{es, more}, err
	})
	return p.es, p.more, err
}

// treePage is a tree's listing and whether entries were left out.
type treePage struct {
	es   []Entry
	more bool
}

// tree is Tree without the memo.
func (r Repo) tree(ctx context.Context, tree string, max int) (es []Entry, more bool, err error) {
	if !git.IsOID(tree) {
		return nil, false, fmt.Errorf("ls-tree %q: not an object id", tree)
	}
	out, cut, err := r.git.Output(ctx, maxListing, nil, "ls-tree", "-z", "-l", "--full-tree", tree)
	if err != nil {
		return nil, false, err
	}
	recs := strings.Split(string(out), "\x00")
	if cut && len(recs) > 0 {
		recs, more = recs[:len(recs)-1], true
	}
	for _, rec := range recs {
		meta, name, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			continue
		}
		size, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			size = -1
		}
		es = append(es, Entry{Mode: f[0], Type: f[1], OID: f[2], Name: name, Size: size})
	}
	sort.SliceStable(es, func(i, j int) bool {
		if es[i].Dir() != es[j].Dir() {
			return es[i].Dir()
		}
		return es[i].Name < es[j].Name
	})
	if len(es) > max {
		es, more = es[:max], true
	}
	return es, more, nil
}

// Blob is a file's content as a page shows it.
type Blob struct {
	OID  string
	Size int64
	// Binary: the content holds a NUL byte in its first 8000 bytes (git's
	// own test); Data is then empty.
	Binary bool
	// TooLarge: Size is over the page's limit; Data is then empty.
	TooLarge bool
	Data     []byte
}

// ReadBlob reads blob oid of size (from Stat) when it is at most max
// bytes and not binary.
func (r Repo) ReadBlob(ctx context.Context, oid string, size, max int64) (Blob, error) {
	return remember(r, keyOf("blob", oid, size, max), func(b Blob) int64 { return int64(len(b.Data)) }, func() (Blob, error) {
		return r.readBlob(ctx, oid, size, max)
	})
}

// readBlob is ReadBlob without the memo.
func (r Repo) readBlob(ctx context.Context, oid string, size, max int64) (Blob, error) {
	b := Blob{OID: oid, Size: size}
	if !git.IsOID(oid) {
		return b, fmt.Errorf("cat-file %q: not an object id", oid)
	}
	if size > max {
		// Still tell binary from text by its head, for the description.
		head, _, err := r.git.Output(ctx, 8000, nil, "cat-file", "blob", oid)
		if err != nil {
			return b, err
		}
		b.TooLarge, b.Binary = true, bytes.IndexByte(head, 0) >= 0
		return b, nil
	}
	data, _, err := r.git.Output(ctx, max, nil, "cat-file", "blob", oid)
	if err != nil {
		return b, err
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		b.Binary = true
		return b, nil
	}
	b.Data = data
	return b, nil
}

// CopyBlob writes blob oid to w, at most max bytes (git.ErrCut past it).
func (r Repo) CopyBlob(ctx context.Context, w io.Writer, oid string, max int64) error {
	if !git.IsOID(oid) {
		return fmt.Errorf("cat-file %q: not an object id", oid)
	}
	_, err := r.git.Copy(ctx, w, max, nil, "cat-file", "blob", oid)
	return err
}

// readmeNames are the files shown as a repository's README, best first.
var readmeNames = []string{"readme.md", "readme.markdown", "readme", "readme.txt", "readme.rst"}

// Readme finds the README among a root tree's entries.
func Readme(es []Entry) (Entry, bool) {
	best, at := Entry{}, len(readmeNames)
	for _, e := range es {
		if e.Type != "blob" {
			continue
		}
		for i, n := range readmeNames {
			if strings.EqualFold(e.Name, n) && i < at {
				best, at = e, i
			}
		}
	}
	return best, at < len(readmeNames)
}

// IsMarkdown reports whether a file name says Markdown.
func IsMarkdown(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".md" || ext == ".markdown"
}
