// Package fsck finds and repairs disagreement between a forge's
// repositories and its database: hook shims and git configuration, the
// refs that pin patch revisions, and merges the hooks missed (a pusher's
// Ctrl-C, a crash) by re-running the merge scan, which is idempotent.
//
// The database is the record: a revision row whose ref is missing gets the
// ref back; a revision ref without a row is adopted as the patch's next
// revision when the patch is known (the push wrote the ref but its
// transaction did not commit), and deleted when it is not.
package fsck

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/push"
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

	Found, Repaired int
}

func (c *Checker) problem(repaired bool, format string, args ...any) {
	c.Found++
	verdict := "NOT repaired"
	if repaired {
		c.Repaired++
		verdict = "repaired"
	}
	fmt.Fprintf(c.Out, format+" (%s)\n", append(args, verdict)...)
}

// Run checks every repository, or only the one named key when not "".
func (c *Checker) Run(ctx context.Context, key string) error {
	all, err := repos.List(ctx, c.DB.R())
	if err != nil {
		return err
	}
	var keys []string
	for _, r := range all {
		if key == "" || r.Name == key {
			keys = append(keys, r.Name)
		}
	}
	if key != "" && len(keys) == 0 {
		return access.NotFound(key)
	}
	for _, k := range keys {
		if err := c.repo(ctx, k); err != nil {
			return fmt.Errorf("fsck %s: %w", reponame.Display(k), err)
		}
	}
	return nil
}

func (c *Checker) repo(ctx context.Context, key string) error {
	name := reponame.Display(key)
	dir, err := reponame.Dir(c.Root.ReposDir(), key)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		c.problem(false, "%s: repository directory %s is missing", name, dir)
		return nil
	}
	if err := c.hooks(ctx, name, dir); err != nil {
		return err
	}
	g := git.Open(dir)
	if err := c.refs(ctx, name, key, g); err != nil {
		return err
	}
	return c.mergeScan(ctx, name, key, g)
}

// hooks rewrites the shims and git configuration, saying so when a shim
// was missing or different (a moved binary or root).
func (c *Checker) hooks(ctx context.Context, name, dir string) error {
	var stale []string
	for _, h := range repos.Hooks {
		b, err := os.ReadFile(filepath.Join(dir, "hooks", h))
		if err != nil || !bytes.Equal(b, []byte(repos.Shim(c.Binary, c.Root.Dir, h))) {
			stale = append(stale, h)
		}
	}
	if err := repos.Configure(ctx, c.Root, dir, c.Binary); err != nil {
		return err
	}
	if len(stale) > 0 {
		c.problem(true, "%s: hook shims %s were missing or stale; rewritten", name, strings.Join(stale, ", "))
	}
	return nil
}

type revRow struct {
	patch  string
	number int
	commit string
}

// refs makes refs/collab/patches/ agree with the revisions table.
func (c *Checker) refs(ctx context.Context, name, key string, g git.Repo) error {
	refs, err := g.Refs(ctx, collabref.Patches)
	if err != nil {
		return err
	}
	rows, err := c.DB.R().QueryContext(ctx, "SELECT patch_id, number, commit_oid FROM revisions WHERE repo = ? ORDER BY patch_id, number", key)
	if err != nil {
		return fmt.Errorf("read revisions: %w", err)
	}
	var revs []revRow
	for rows.Next() {
		var r revRow
		if err := rows.Scan(&r.patch, &r.number, &r.commit); err != nil {
			rows.Close()
			return fmt.Errorf("read revisions: %w", err)
		}
		revs = append(revs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read revisions: %w", err)
	}
	recorded := map[string]bool{}
	head := map[string]string{}
	var fixes []git.RefUpdate
	for _, r := range revs {
		ref := collabref.RevRef(r.patch, r.commit)
		recorded[ref] = true
		head[r.patch] = r.commit // rows come in number order: the last wins
		if refs[ref] == r.commit {
			continue
		}
		ok, err := g.HasObject(ctx, r.commit)
		if err != nil {
			return err
		}
		if !ok {
			c.problem(false, "%s: revision %d of patch %s: commit %s is gone from the repository", name, r.number, r.patch, r.commit)
			continue
		}
		fixes = append(fixes, git.RefUpdate{Ref: ref, New: r.commit})
		c.problem(true, "%s: revision %d of patch %s: ref %s was missing; restored", name, r.number, r.patch, ref)
	}
	// Refs the table does not know: adopt revisions of known patches.
	var orphans []string
	for ref := range refs {
		if _, _, ok := revRefParts(ref); ok && !recorded[ref] {
			orphans = append(orphans, ref)
		}
	}
	sort.Strings(orphans)
	for _, ref := range orphans {
		id, oid, _ := revRefParts(ref)
		adopted, err := c.adopt(ctx, key, g, id, oid, refs[ref])
		if err != nil {
			return err
		}
		if adopted > 0 {
			head[id] = oid
			c.problem(true, "%s: ref %s had no revision row; adopted as revision %d of patch %s", name, ref, adopted, id)
			if refs[ref] != oid {
				fixes = append(fixes, git.RefUpdate{Ref: ref, New: oid})
			}
			continue
		}
		fixes = append(fixes, git.RefUpdate{Ref: ref, New: git.ZeroOID, Old: refs[ref]})
		c.problem(true, "%s: ref %s names no recorded revision of a known patch; deleted", name, ref)
	}
	for id, oid := range head {
		ref := collabref.HeadRef(id)
		if refs[ref] == oid {
			continue
		}
		if ok, err := g.HasObject(ctx, oid); err != nil || !ok {
			continue // reported above
		}
		fixes = append(fixes, git.RefUpdate{Ref: ref, New: oid})
		c.problem(true, "%s: %s did not point at the last revision %s; moved", name, ref, oid)
	}
	for ref, oid := range refs {
		if id, ok := headRefPatch(ref); ok && head[id] == "" {
			fixes = append(fixes, git.RefUpdate{Ref: ref, New: git.ZeroOID, Old: oid})
			c.problem(true, "%s: ref %s belongs to no recorded patch; deleted", name, ref)
		}
	}
	return g.UpdateRefs(ctx, fixes)
}

// adopt records commit oid as the next revision of patch id when that
// patch exists and oid is a commit; it returns the revision number, or 0.
func (c *Checker) adopt(ctx context.Context, key string, g git.Repo, id, oid, pointsAt string) (int, error) {
	p, ok, err := patches.Lookup(ctx, c.DB.R(), key, id)
	if err != nil || !ok {
		return 0, err
	}
	has, err := g.HasObject(ctx, oid)
	if err != nil || !has {
		return 0, err
	}
	cs, err := g.Commits(ctx, oid)
	if err != nil || len(cs) != 1 {
		return 0, nil // not a commit
	}
	base := oid
	if len(cs[0].Parents) > 0 {
		base = cs[0].Parents[0]
	}
	if tip, ok, err := g.ResolveRef(ctx, push.HeadsPrefix+p.Base); err == nil && ok {
		if mb, ok, err := g.MergeBase(ctx, oid, tip); err == nil && ok {
			base = mb
		}
	}
	var n int
	err = c.DB.Write(ctx, func(tx *sql.Tx) error {
		rev, _, err := patches.AddRevision(ctx, tx, key, id, oid, base, access.Local, c.Now())
		n = rev.Number
		return err
	})
	return n, err
}

// mergeScan re-runs the merge scan over the whole history of every branch
// that an open patch targets.
func (c *Checker) mergeScan(ctx context.Context, name, key string, g git.Repo) error {
	bases, err := patches.OpenBases(ctx, c.DB.R(), key)
	if err != nil || len(bases) == 0 {
		return err
	}
	branches, err := g.Refs(ctx, push.HeadsPrefix)
	if err != nil {
		return err
	}
	e := &push.Env{Root: c.Root, DB: c.DB, Repo: key, Git: g, Principal: access.Local, URL: c.URL,
		Stderr: io.Discard, Log: c.Log, Now: c.Now}
	var names []string
	for b := range bases {
		names = append(names, b)
	}
	sort.Strings(names)
	for _, b := range names {
		tip, ok := branches[push.HeadsPrefix+b]
		if !ok {
			continue
		}
		merged, err := e.Scan(ctx, push.ScanRange{Branch: b, Revs: []string{tip}, By: access.Unknown}, 0)
		if err != nil {
			return err
		}
		for _, m := range merged {
			c.problem(true, "%s: patch %s had reached %s as %s unrecorded; merge recorded", name, m.PatchID, b, m.Commit)
		}
	}
	return nil
}

// revRefParts splits refs/collab/patches/ID/rev/OID.
func revRefParts(ref string) (id, oid string, ok bool) {
	if r, _ := collabref.Parse(ref); r.Kind == collabref.Rev {
		return r.ID, r.OID, true
	}
	return "", "", false
}

// headRefPatch returns ID of refs/collab/patches/ID/head.
func headRefPatch(ref string) (string, bool) {
	r, _ := collabref.Parse(ref)
	return r.ID, r.Kind == collabref.Head
}
