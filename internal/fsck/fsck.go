// Package fsck finds and repairs disagreement between a forge's
// repositories and its database: hook shims and git configuration, the
// refs that pin patch revisions, and merges the hooks missed (a pusher's
// Ctrl-C, a crash) by re-running the merge scan, which is idempotent.
//
// The database is the record, and no work is ever thrown away:
//   - a revision row whose ref is missing gets the ref back;
//   - a revision ref without a row is adopted as a revision of its patch
//     only when its commit carries that patch's Patch: trailer (or, for a
//     patch without one, descends from or leads to one of its pinned
//     revisions), and never when the commit is on the patch's target
//     branch (a hand-made rev/<main commit> is not a revision);
//   - adopted revisions are numbered after the existing ones, in the order
//     of their commit times; numbers already given are never changed
//     (reviews, checks and interdiffs name them). A commit older than the
//     patch's latest revision would pose as the newest with the next
//     number, so it is kept as refs/collab/patches/ID/recovered/OID instead;
//   - a patch the database does not know at all but whose head ref exists
//     (pushed after the database was copied) is recreated, its revisions
//     adopted as above, credited to "unknown";
//   - a ref is deleted only when its commit holds nothing that a branch, a
//     tag or a recorded revision does not already reach.
//
// With DryRun nothing is written; every problem is still named.
package fsck

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookdir"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
)

// Checker runs fsck over one root.
type Checker struct {
	Root   forge.Root
	DB     *store.DB
	Binary string // collab-hook's absolute path, for the hook shims
	Out    io.Writer
	Log    *slog.Logger
	Now    func() time.Time
	// URL is the web UI's base URL for merge messages ("" reads the setting).
	URL string
	// DryRun only reports.
	DryRun bool

	Found, Repaired int
}

// problem names one problem. repaired says whether fsck can repair it; in
// a dry run nothing is, and the line says what would be done.
func (c *Checker) problem(repaired bool, format string, args ...any) {
	c.Found++
	verdict := "NOT repaired"
	switch {
	case repaired && c.DryRun:
		verdict = "dry run: would repair"
	case repaired:
		c.Repaired++
		verdict = "repaired"
	}
	fmt.Fprintf(c.Out, format+" (%s)\n", append(args, verdict)...)
}

// Run checks every repository, or only the one named key when not "". A
// repository that cannot be checked (missing, unreadable) is reported and
// the others are still checked.
func (c *Checker) Run(ctx context.Context, key string) error {
	if key == "" {
		bad, err := c.DB.QuickCheck(ctx)
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			c.problem(false, "the database %s is damaged (SQLite's quick_check: %s): stop the forge (collab-web, sshd's forced command) and restore the last backup (collab-hook restore, docs/operations.md)",
				c.Root.DBPath(), strings.Join(clip(bad, 3), "; "))
			return nil
		}
	}
	all, err := repos.List(ctx, c.DB.R())
	if err != nil {
		return store.Damaged(err)
	}
	var keys []string
	known := map[string]bool{}
	for _, r := range all {
		known[r.Name] = true
		if key == "" || r.Name == key {
			keys = append(keys, r.Name)
		}
	}
	if key != "" && len(keys) == 0 {
		return access.NotFound(key)
	}
	if key == "" {
		onDisk, err := c.onDisk()
		if err != nil {
			return err
		}
		if len(all) == 0 && len(onDisk) > 0 {
			return fault.New(fault.Conflict, "refusing to run: the database knows no repositories but %s holds %d (%s); is %s the forge's database? Restore it (or its backup) first",
				c.Root.ReposDir(), len(onDisk), strings.Join(clip(onDisk, 3), ", "), c.Root.DBPath())
		}
		for _, k := range onDisk {
			if !known[k] {
				c.problem(false, "%s: repository on disk is not in the database", reponame.Display(k))
			}
		}
	}
	if !c.DryRun && len(keys) > 0 {
		// Not a problem where it is missing (an older collab made none):
		// serve has git run the shims instead, only slower.
		if err := hookdir.Install(c.Root.Dir, repos.HookSet(c.Binary, c.Root.Dir)); err != nil {
			c.problem(false, "the root's hooks directory: %v", err)
		}
	}
	for _, k := range keys {
		if err := c.repo(ctx, k); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			c.problem(false, "%s: could not be checked: %v", reponame.Display(k), err)
		}
	}
	if key == "" {
		return c.modes()
	}
	return nil
}

// onDisk lists the repository keys under repos/ (directories NAME.git
// holding HEAD).
func (c *Checker) onDisk() ([]string, error) {
	dir := c.Root.ReposDir()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() || p == dir {
			return nil
		}
		if strings.HasSuffix(d.Name(), ".git") {
			if _, err := os.Stat(filepath.Join(p, "HEAD")); err == nil {
				rel, err := filepath.Rel(dir, p)
				if err == nil {
					out = append(out, filepath.ToSlash(rel))
				}
			}
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	sort.Strings(out)
	return out, nil
}

func clip(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
}

func (c *Checker) repo(ctx context.Context, key string) error {
	name := reponame.Display(key)
	dir, err := reponame.Dir(c.Root.ReposDir(), key)
	if fault.KindOf(err) == fault.NotFound {
		c.problem(false, "%s: repository directory %s is missing", name, filepath.Join(c.Root.ReposDir(), filepath.FromSlash(key)))
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		c.problem(false, "%s: %s is not a git repository", name, dir)
		return nil
	}
	g := git.Open(dir)
	if err := c.objects(name, dir); err != nil {
		return err
	}
	if err := c.gate(ctx, name, key, dir); err != nil {
		return err
	}
	if err := c.hooks(ctx, name, dir, g); err != nil {
		return err
	}
	if err := c.refs(ctx, name, key, g); err != nil {
		return err
	}
	return c.mergeScan(ctx, name, key, g)
}

// objects moves a repository's objects to repos.ObjectStore where they
// are still in objects/ (a repository made before collab did so).
func (c *Checker) objects(name, dir string) error {
	if repos.LinkOff() || !repos.Unrelocated(dir) {
		return nil
	}
	const found = "objects/ is not yet the link to " + repos.ObjectStore + "/: each push's connectivity check starts a process"
	if c.DryRun {
		c.problem(true, "%s: %s", name, found)
		return nil
	}
	moved, err := repos.Relocate(dir)
	if err != nil {
		return err
	}
	// A filesystem that cannot swap the names keeps the stock layout,
	// which works: nothing to report.
	if moved {
		c.problem(true, "%s: %s; moved", name, found)
	}
	return nil
}

// gate names the exposure of a repository whose gate cannot run
// (hookdir.GateDown): git skips a pre-receive it cannot run, so where serve
// does not run the root's hooks itself a protected branch took pushes that
// nothing checked; serve has refused them since this check exists, but a
// push outside serve (a local path) was not. That cannot be repaired, so
// it is reported as not repaired (fsck exits non-zero) for the operator to
// look at; hooks then rewrites the shim, and the next fsck is clean.
func (c *Checker) gate(ctx context.Context, name, key, dir string) error {
	why, since := hookdir.GateDown(dir)
	if why == "" {
		return nil
	}
	rules, err := branches.List(ctx, c.DB.R(), key)
	if err != nil {
		return err
	}
	if len(rules) == 0 {
		return nil // nothing was exposed; hooks names the hook
	}
	bs := make([]string, len(rules))
	for i, r := range rules {
		bs[i] = r.Branch
	}
	exposed := "protected branches exposed: " + strings.Join(bs, ", ")
	when := "since an unknown time"
	if !since.IsZero() {
		when = "since " + store.FormatTime(since)
	}
	c.problem(false, "%s: the gate could not run (%s) %s: %s; check what reached them", name, why, when, exposed)
	return nil
}

// hooks checks the shims (present, current, executable) and the git
// configuration, naming each problem, and rewrites them all.
func (c *Checker) hooks(ctx context.Context, name, dir string, g git.Repo) error {
	var found []string
	for _, h := range repos.Hooks {
		p := filepath.Join(dir, "hooks", h)
		st, err := os.Stat(p)
		if err != nil {
			found = append(found, "hook "+h+" is missing")
			continue
		}
		if b, err := os.ReadFile(p); err != nil || !bytes.Equal(b, []byte(repos.Shim(c.Binary, c.Root.Dir, h))) {
			found = append(found, "hook "+h+" is stale (another binary or root)")
		}
		if st.Mode().Perm()&0o100 == 0 { // git runs hooks as their owner, the forge's user
			found = append(found, fmt.Sprintf("hook %s is not executable (mode %v): git would skip it", h, st.Mode().Perm()))
		}
	}
	for _, kv := range repos.Config() {
		out, err := g.Run(ctx, nil, "config", "--get", kv[0])
		if got := strings.TrimSpace(string(out)); err != nil || got != kv[1] {
			found = append(found, fmt.Sprintf("git config %s is %q, want %q", kv[0], got, kv[1]))
		}
	}
	if len(found) == 0 {
		return nil
	}
	if !c.DryRun {
		if err := repos.Configure(ctx, c.Root, dir, c.Binary); err != nil {
			return err
		}
	}
	for _, f := range found {
		c.problem(true, "%s: %s; rewritten", name, f)
	}
	return nil
}

// refState is what refs() works with for one repository.
type refState struct {
	name, key string
	g         git.Repo
	refs      map[string]string // refs/collab/patches/… → oid
	patches   map[string]patches.Patch
	revs      map[string][]patches.Revision // by patch, in number order
	known     []string                      // commits whose history the database has: revisions, branches, tags
	fixes     []git.RefUpdate
}

func (s *refState) update(u git.RefUpdate) { s.fixes = append(s.fixes, u) }

// refs makes refs/collab/patches/ agree with the database, adopting,
// keeping or deleting the refs it does not know (see the package comment).
func (c *Checker) refs(ctx context.Context, name, key string, g git.Repo) error {
	// Pushes may go on: their refs are ordered by the refs lock.
	unlock, err := patches.LockRefs(ctx, g.Dir)
	if errors.Is(err, syscall.EROFS) && c.DryRun {
		// A read-only root takes no push, and a dry run writes nothing:
		// no lock is needed, and none can be made.
		unlock, err = func() {}, nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	s := &refState{name: name, key: key, g: g}
	if s.refs, err = g.Refs(ctx, collabref.Patches); err != nil {
		return err
	}
	if err := c.load(ctx, s); err != nil {
		return err
	}
	// Rows whose refs are missing.
	for id, revs := range s.revs {
		for _, r := range revs {
			ref := collabref.RevRef(id, r.Commit)
			if s.refs[ref] == r.Commit {
				continue
			}
			ok, err := g.HasObject(ctx, r.Commit)
			if err != nil {
				return err
			}
			if !ok {
				c.problem(false, "%s: revision %d of patch %s: commit %s is gone from the repository", name, r.Number, id, r.Commit)
				continue
			}
			s.update(git.RefUpdate{Ref: ref, New: r.Commit})
			s.refs[ref] = r.Commit
			c.problem(true, "%s: revision %d of patch %s: ref %s was missing; restored", name, r.Number, id, ref)
		}
	}
	// Revision refs without rows, by patch.
	orphans := map[string][]string{}
	recorded := map[string]bool{}
	for id, revs := range s.revs {
		for _, r := range revs {
			recorded[collabref.RevRef(id, r.Commit)] = true
		}
	}
	for ref := range s.refs {
		if r, ok := collabref.Parse(ref); ok && r.Kind == collabref.Rev && !recorded[ref] {
			orphans[r.ID] = append(orphans[r.ID], r.OID)
		}
	}
	ids := make([]string, 0, len(orphans))
	for id := range orphans {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	left := map[string][]string{} // orphans neither adopted nor kept: deleted if nothing is lost
	for _, id := range ids {
		rest, err := c.adoptAll(ctx, s, id, orphans[id])
		if err != nil {
			return err
		}
		left[id] = rest
	}
	for _, id := range ids {
		for _, oid := range left[id] {
			if err := c.dropOrKeep(ctx, s, collabref.RevRef(id, oid), oid, id); err != nil {
				return err
			}
		}
	}
	// Heads: on the last revision of each recorded patch; others go when
	// nothing is lost.
	for id, revs := range s.revs {
		if len(revs) == 0 {
			continue
		}
		last := revs[len(revs)-1].Commit
		ref := collabref.HeadRef(id)
		if s.refs[ref] == last {
			continue
		}
		if ok, err := g.HasObject(ctx, last); err != nil || !ok {
			continue // reported above
		}
		s.update(git.RefUpdate{Ref: ref, New: last})
		c.problem(true, "%s: %s did not point at the last revision %s; moved", name, ref, last)
	}
	var heads []string
	for ref := range s.refs {
		if r, ok := collabref.Parse(ref); ok && r.Kind == collabref.Head && len(s.revs[r.ID]) == 0 {
			heads = append(heads, ref)
		}
	}
	sort.Strings(heads)
	for _, ref := range heads {
		r, _ := collabref.Parse(ref)
		if err := c.dropOrKeep(ctx, s, ref, s.refs[ref], r.ID); err != nil {
			return err
		}
	}
	if c.DryRun {
		return nil
	}
	return g.UpdateRefs(ctx, s.fixes)
}

// load reads the repository's patches and revisions, and the commits the
// database's record already reaches.
func (c *Checker) load(ctx context.Context, s *refState) error {
	s.patches = map[string]patches.Patch{}
	s.revs = map[string][]patches.Revision{}
	rows, err := c.DB.R().QueryContext(ctx, "SELECT id, state, base FROM patches WHERE repo = ?", s.key)
	if err != nil {
		return fmt.Errorf("read patches: %w", err)
	}
	for rows.Next() {
		var p patches.Patch
		if err := rows.Scan(&p.ID, &p.State, &p.Base); err != nil {
			rows.Close()
			return fmt.Errorf("read patches: %w", err)
		}
		s.patches[p.ID] = p
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read patches: %w", err)
	}
	rows, err = c.DB.R().QueryContext(ctx, "SELECT patch_id, number, commit_oid, base_commit FROM revisions WHERE repo = ? ORDER BY patch_id, number", s.key)
	if err != nil {
		return fmt.Errorf("read revisions: %w", err)
	}
	for rows.Next() {
		var id string
		var r patches.Revision
		if err := rows.Scan(&id, &r.Number, &r.Commit, &r.BaseCommit); err != nil {
			rows.Close()
			return fmt.Errorf("read revisions: %w", err)
		}
		s.revs[id] = append(s.revs[id], r)
		s.known = append(s.known, r.Commit)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read revisions: %w", err)
	}
	tips, err := s.g.Refs(ctx, ops.HeadsPrefix, "refs/tags/")
	if err != nil {
		return err
	}
	for _, oid := range tips {
		s.known = append(s.known, oid)
	}
	return nil
}

// candidate is an orphan revision ref's commit that may be adopted.
type candidate struct {
	oid  string
	at   time.Time
	base string
}

// adoptAll adopts the orphan commits oids of patch id that qualify, keeps
// those older than its latest revision under recovered/, and returns the
// rest. A patch the database lacks is recreated when its head ref is there.
func (c *Checker) adoptAll(ctx context.Context, s *refState, id string, oids []string) (rest []string, err error) {
	p, exists := s.patches[id]
	if !exists {
		if _, hasHead := s.refs[collabref.HeadRef(id)]; !hasHead {
			return oids, nil
		}
		p = patches.Patch{ID: id, State: patches.Open, Base: s.g.DefaultBranch(ctx)}
	}
	baseTip, hasBase, err := s.g.ResolveRef(ctx, ops.HeadsPrefix+p.Base)
	if err != nil {
		return nil, err
	}
	var cands []candidate
	for _, oid := range oids {
		ok, why, err := c.qualifies(ctx, s, id, oid, baseTip, hasBase, exists)
		if err != nil {
			return nil, err
		}
		if !ok {
			rest = append(rest, oid)
			c.logf("%s: ref %s not adopted: %s", s.name, collabref.RevRef(id, oid), why)
			continue
		}
		cands = append(cands, candidate{oid: oid})
	}
	if len(cands) == 0 {
		return rest, nil
	}
	var all []string
	for _, cd := range cands {
		all = append(all, cd.oid)
	}
	revs := s.revs[id]
	if len(revs) > 0 {
		all = append(all, revs[len(revs)-1].Commit)
	}
	times, err := s.g.CommitTimes(ctx, all...)
	if err != nil {
		return nil, err
	}
	for i := range cands {
		cands[i].at = times[cands[i].oid]
		cands[i].base = cands[i].oid
		if hasBase {
			if mb, ok, err := s.g.MergeBase(ctx, cands[i].oid, baseTip); err != nil {
				return nil, err
			} else if ok {
				cands[i].base = mb
			}
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if !cands[i].at.Equal(cands[j].at) {
			return cands[i].at.Before(cands[j].at)
		}
		return cands[i].oid < cands[j].oid
	})
	var latest time.Time // the latest revision's commit time
	if len(revs) > 0 {
		latest = times[revs[len(revs)-1].Commit]
	}
	var adopt []candidate
	for _, cd := range cands {
		newer := len(revs) == 0 || cd.at.After(latest)
		if !newer && cd.at.Equal(latest) {
			// Commit times have seconds: within one, descent decides.
			if newer, err = s.g.IsAncestor(ctx, revs[len(revs)-1].Commit, cd.oid); err != nil {
				return nil, err
			}
		}
		if !newer {
			ref := collabref.RevRef(id, cd.oid)
			keep := collabref.RecoveredRef(id, cd.oid)
			s.update(git.RefUpdate{Ref: keep, New: cd.oid})
			s.update(git.RefUpdate{Ref: ref, New: git.ZeroOID, Old: s.refs[ref]})
			s.known = append(s.known, cd.oid) // the kept ref reaches it now
			c.problem(true, "%s: ref %s had no revision row and is older than revision %d of patch %s; kept as %s, not numbered",
				s.name, ref, revs[len(revs)-1].Number, id, keep)
			continue
		}
		adopt = append(adopt, cd)
	}
	if len(adopt) == 0 {
		return rest, nil
	}
	numbers, err := c.record(ctx, s, p, exists, adopt)
	if err != nil {
		return nil, err
	}
	if !exists {
		c.problem(true, "%s: patch %s was unknown to the database but its refs were there; recreated (author unknown, base %s)", s.name, id, p.Base)
	}
	for i, cd := range adopt {
		ref := collabref.RevRef(id, cd.oid)
		if s.refs[ref] != cd.oid {
			s.update(git.RefUpdate{Ref: ref, New: cd.oid})
		}
		c.problem(true, "%s: ref %s had no revision row; adopted as revision %d of patch %s", s.name, ref, numbers[i], id)
		s.known = append(s.known, cd.oid)
		s.revs[id] = append(s.revs[id], patches.Revision{Number: numbers[i], Commit: cd.oid, BaseCommit: cd.base})
	}
	return rest, nil
}

func (c *Checker) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log.Info(fmt.Sprintf(format, args...))
	}
}

// qualifies says whether commit oid may become a revision of patch id: a
// commit, not on the target branch, carrying the patch's trailer or (for a
// known patch without trailers) related by ancestry to one of its pinned
// revisions.
func (c *Checker) qualifies(ctx context.Context, s *refState, id, oid, baseTip string, hasBase, exists bool) (bool, string, error) {
	has, err := s.g.HasObject(ctx, oid)
	if err != nil || !has {
		return false, "commit missing", err
	}
	cs, err := s.g.Commits(ctx, oid)
	if err != nil || len(cs) != 1 {
		return false, "not a commit", nil
	}
	if hasBase {
		on, err := s.g.IsAncestor(ctx, oid, baseTip)
		if err != nil {
			return false, "", err
		}
		if on {
			return false, "the commit is on the target branch", nil
		}
	}
	named := ops.TrailerIDs(cs[0])
	for _, t := range named {
		if t == id {
			return true, "", nil
		}
	}
	if len(named) > 0 {
		return false, "its Patch: (or Change-Id:) trailer names another patch", nil
	}
	if exists {
		for _, r := range s.revs[id] {
			if up, err := s.g.IsAncestor(ctx, r.Commit, oid); err != nil {
				return false, "", err
			} else if up {
				return true, "", nil
			}
			if down, err := s.g.IsAncestor(ctx, oid, r.Commit); err != nil {
				return false, "", err
			} else if down {
				return true, "", nil
			}
		}
	}
	return false, "no Patch: trailer and no relation to a pinned revision", nil
}

// record writes the adopted revisions (and the patch, when recreated) in
// one transaction and returns their numbers.
func (c *Checker) record(ctx context.Context, s *refState, p patches.Patch, exists bool, adopt []candidate) ([]int, error) {
	numbers := make([]int, len(adopt))
	if c.DryRun {
		n := len(s.revs[p.ID])
		for i := range adopt {
			numbers[i] = n + i + 1
		}
		return numbers, nil
	}
	var title, desc string
	if !exists {
		cs, err := s.g.Commits(ctx, adopt[len(adopt)-1].oid)
		if err == nil && len(cs) == 1 {
			title, desc = ops.Subject(string(cs[0].Message)), ops.Body(string(cs[0].Message))
		}
		if title == "" {
			title = "(recovered patch)"
		}
	}
	now := c.Now()
	err := c.DB.Write(ctx, func(tx *sql.Tx) error {
		if !exists {
			if _, err := patches.Create(ctx, tx, patches.New{Repo: s.key, ID: p.ID, Title: title, Description: desc,
				Author: access.Unknown, Base: p.Base}, now); err != nil {
				return err
			}
		}
		for i, cd := range adopt {
			rev, _, err := patches.AddRevision(ctx, tx, s.key, p.ID, cd.oid, cd.base, access.Unknown, now)
			if err != nil {
				return err
			}
			numbers[i] = rev.Number
		}
		return nil
	})
	if err == nil && !exists {
		s.patches[p.ID] = p
	}
	return numbers, err
}

// dropOrKeep deletes ref (pointing at oid) when its commit holds nothing
// the record lacks, and otherwise keeps it and says so.
func (c *Checker) dropOrKeep(ctx context.Context, s *refState, ref, oid, id string) error {
	lost := false
	if ok, err := s.g.HasObject(ctx, oid); err != nil {
		return err
	} else if ok {
		if lost, err = s.g.Unreached(ctx, oid, s.known); err != nil {
			return err
		}
	}
	if lost {
		c.problem(false, "%s: ref %s belongs to no recorded revision but holds work nothing else reaches; kept for an operator to look at (git log %s)",
			s.name, ref, oid)
		return nil
	}
	s.update(git.RefUpdate{Ref: ref, New: git.ZeroOID, Old: s.refs[ref]})
	what := "names no recorded revision of a known patch"
	if _, ok := s.patches[id]; !ok {
		what = "belongs to no recorded patch"
	}
	c.problem(true, "%s: ref %s %s and holds nothing unrecorded; deleted", s.name, ref, what)
	return nil
}

// mergeScan re-runs the merge scan over the whole history of every branch
// that an open patch targets, crediting what it finds to "unknown" (it
// cannot tell who pushed it), and records the branch as scanned.
func (c *Checker) mergeScan(ctx context.Context, name, key string, g git.Repo) error {
	bases, err := patches.OpenBases(ctx, c.DB.R(), key)
	if err != nil || len(bases) == 0 {
		return err
	}
	branches, err := g.Refs(ctx, ops.HeadsPrefix)
	if err != nil {
		return err
	}
	scanned, err := patches.BranchScans(ctx, c.DB.R(), key)
	if err != nil {
		return err
	}
	e := &ops.Push{Root: c.Root, DB: c.DB, Repo: key, Git: g, Principal: access.Unknown, URL: c.URL,
		Stderr: io.Discard, Log: c.Log, Now: c.Now}
	var names []string
	for b := range bases {
		names = append(names, b)
	}
	sort.Strings(names)
	for _, b := range names {
		tip, ok := branches[ops.HeadsPrefix+b]
		if !ok {
			continue
		}
		from := scanned[b]
		if !c.DryRun {
			// Moves the reflog names (a push, a submit) are credited to
			// their movers before the whole history is scanned.
			made, err := e.MakeUp(ctx, b, from, tip)
			if err != nil {
				return err
			}
			for _, m := range made {
				c.problem(true, "%s: patch %s had reached %s as %s unrecorded; merge recorded (by %s)", name, m.PatchID, b, m.Commit, m.By)
			}
			if len(made) > 0 || from != tip {
				if now, err := patches.BranchScans(ctx, c.DB.R(), key); err == nil {
					from = now[b]
				}
			}
		}
		merged, err := e.Scan(ctx, ops.ScanRange{Branch: b, Revs: []string{tip}, By: access.Unknown,
			From: from, Done: tip, DryRun: c.DryRun}, 0)
		if err != nil {
			return err
		}
		for _, m := range merged {
			c.problem(true, "%s: patch %s had reached %s as %s unrecorded; merge recorded (by unknown)", name, m.PatchID, b, m.Commit)
		}
	}
	return nil
}
