package export

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"time"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/store"
)

// IssueRecord is an issue's record as an export wrote it: the tip of its
// ref, decoded.
type IssueRecord struct {
	Issue    Issue
	Comments []Comment // in their order
	Tenures  []Tenure  // by token
}

// PatchRecord is a patch's record as an export wrote it.
type PatchRecord struct {
	Patch     Patch
	Revisions []Revision    // by number
	Reviews   []Review      // in their order
	States    []StateChange // in their order
}

// Records is every record an export left in a repository.
type Records struct {
	Issues  []IssueRecord
	Patches []PatchRecord
}

// Read reads the record refs of the bare repository gitDir (tips only)
// and checks every commit of their histories as Verify does, a signature
// by any of keys being good. The report says what failed the check; the
// records are read either way, and a tip whose files do not decode is an
// error.
func Read(ctx context.Context, gitDir string, keys []ed25519.PublicKey) (Records, Report, error) {
	g := gitCmd{dir: gitDir}
	var out Records
	if err := g.checkFormat(ctx); err != nil {
		return out, Report{}, err
	}
	tips, err := g.records(ctx)
	if err != nil {
		return out, Report{}, err
	}
	if len(tips) == 0 {
		return out, Report{Problems: []string{}}, nil
	}
	// One cat-file answers both the check and the reading.
	cat, err := g.catFile(ctx)
	if err != nil {
		return out, Report{}, err
	}
	defer cat.close()
	rep, err := verify(cat, tips, keys, false)
	if err != nil {
		return out, rep, err
	}
	refs := make([]string, 0, len(tips))
	for r := range tips {
		refs = append(refs, r)
	}
	sort.Strings(refs)
	roots := make([]string, len(refs))
	for i, ref := range refs {
		roots[i] = tips[ref].tree
	}
	trees, err := readTrees(cat, roots)
	if err != nil {
		return out, rep, err
	}
	for i, ref := range refs {
		files := trees[i]
		r, _ := collabref.Parse(ref)
		if r.Kind == collabref.Issue {
			ir, err := decodeIssue(files)
			if err != nil {
				return out, rep, fmt.Errorf("%s: %w", ref, err)
			}
			if ir.Issue.ID != r.ID {
				return out, rep, fmt.Errorf("%s: %s names issue %q", ref, IssueFile, ir.Issue.ID)
			}
			out.Issues = append(out.Issues, ir)
			continue
		}
		pr, err := decodePatch(files)
		if err != nil {
			return out, rep, fmt.Errorf("%s: %w", ref, err)
		}
		if pr.Patch.ID != r.ID {
			return out, rep, fmt.Errorf("%s: %s names patch %q", ref, PatchFile, pr.Patch.ID)
		}
		out.Patches = append(out.Patches, pr)
	}
	// Oldest first, as the record was made (ids are random).
	sort.SliceStable(out.Issues, func(i, j int) bool { return out.Issues[i].Issue.CreatedAt < out.Issues[j].Issue.CreatedAt })
	sort.SliceStable(out.Patches, func(i, j int) bool { return out.Patches[i].Patch.CreatedAt < out.Patches[j].Patch.CreatedAt })
	return out, rep, nil
}

// readTrees returns the files under each of roots, by path, in git's
// (sorted) order within each directory. It asks git for a level of every
// tree at once, then for every file at once: three pipelined batches for
// a record's two levels, however many records there are.
func readTrees(cat *catFile, roots []string) ([][]file, error) {
	type entry struct {
		root      int
		path, oid string
	}
	level := make([]entry, len(roots))
	for i, t := range roots {
		level[i] = entry{root: i, oid: t}
	}
	var blobs []entry
	for len(level) > 0 {
		oids := make([]string, len(level))
		for i, e := range level {
			oids[i] = e.oid
		}
		objs, err := cat.getMany(oids)
		if err != nil {
			return nil, err
		}
		var next []entry
		for i, e := range level {
			if objs[i].typ != "tree" {
				return nil, fmt.Errorf("%s is a %s, not a tree", e.oid, objs[i].typ)
			}
			ok := eachEntry(objs[i].data, func(mode, name, oid string) bool {
				c := entry{root: e.root, path: path.Join(e.path, name), oid: oid}
				if mode == "40000" {
					next = append(next, c)
				} else {
					blobs = append(blobs, c)
				}
				return true
			})
			if !ok {
				return nil, fmt.Errorf("tree %s is malformed", e.oid)
			}
		}
		level = next
	}
	oids := make([]string, len(blobs))
	for i, b := range blobs {
		oids[i] = b.oid
	}
	objs, err := cat.getMany(oids)
	if err != nil {
		return nil, err
	}
	out := make([][]file, len(roots))
	for i, b := range blobs {
		if objs[i].typ != "blob" {
			return nil, fmt.Errorf("%s is a %s, not a file", b.path, objs[i].typ)
		}
		out[b.root] = append(out[b.root], file{path: b.path, data: objs[i].data})
	}
	return out, nil
}

// decodeInto decodes one record file strictly: an unknown field is an
// error, so a record from a newer or another format is refused rather
// than half read.
func decodeInto(f file, v any) error {
	dec := json.NewDecoder(bytes.NewReader(f.data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}

func decodeIssue(files []file) (IssueRecord, error) {
	var r IssueRecord
	found := false
	for _, f := range files {
		dir, _ := path.Split(f.path)
		var err error
		switch {
		case f.path == IssueFile:
			found, err = true, decodeInto(f, &r.Issue)
		case dir == CommentsDir+"/":
			var c Comment
			err = decodeInto(f, &c)
			r.Comments = append(r.Comments, c)
		case dir == TenuresDir+"/":
			var t Tenure
			err = decodeInto(f, &t)
			r.Tenures = append(r.Tenures, t)
		default:
			err = fmt.Errorf("unknown file %s in an issue's record", f.path)
		}
		if err != nil {
			return r, err
		}
	}
	if !found {
		return r, fmt.Errorf("no %s", IssueFile)
	}
	sort.SliceStable(r.Tenures, func(i, j int) bool { return r.Tenures[i].Token < r.Tenures[j].Token })
	return r, nil
}

func decodePatch(files []file) (PatchRecord, error) {
	var r PatchRecord
	found := false
	for _, f := range files {
		dir, _ := path.Split(f.path)
		var err error
		switch {
		case f.path == PatchFile:
			found, err = true, decodeInto(f, &r.Patch)
		case dir == RevisionDir+"/":
			var v Revision
			err = decodeInto(f, &v)
			r.Revisions = append(r.Revisions, v)
		case dir == ReviewsDir+"/":
			var v Review
			err = decodeInto(f, &v)
			r.Reviews = append(r.Reviews, v)
		case dir == StatesDir+"/":
			var v StateChange
			err = decodeInto(f, &v)
			r.States = append(r.States, v)
		default:
			err = fmt.Errorf("unknown file %s in a patch's record", f.path)
		}
		if err != nil {
			return r, err
		}
	}
	if !found {
		return r, fmt.Errorf("no %s", PatchFile)
	}
	sort.SliceStable(r.Revisions, func(i, j int) bool { return r.Revisions[i].Number < r.Revisions[j].Number })
	return r, nil
}

// tree is the tree oid the record would have in repo at now: what an
// export here would write for it (a tenure that has run out unswept is
// written as the sweep will record it, as load does).
func (r IssueRecord) tree(repo string, now time.Time) (string, error) {
	i := r.Issue
	i.Repo = repo
	nowText := store.FormatTime(now)
	ts := make([]Tenure, len(r.Tenures))
	for k, t := range r.Tenures {
		if t.EndedAt == nil && t.ExpiresAt != nil && *t.ExpiresAt <= nowText {
			t.EndedAt, t.EndReason = t.ExpiresAt, ptrTo(expired)
		}
		ts[k] = t
	}
	rec, err := issueRecord(repo, i, r.Comments, ts)
	if err != nil {
		return "", err
	}
	t, _ := buildTree(rec.files)
	return t, nil
}

func (r PatchRecord) tree(repo string, _ time.Time) (string, error) {
	p := r.Patch
	p.Repo = repo
	rec, err := patchRecord(repo, p, r.Revisions, r.Reviews, r.States)
	if err != nil {
		return "", err
	}
	t, _ := buildTree(rec.files)
	return t, nil
}
