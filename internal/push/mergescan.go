package push

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/patches"
)

// Merged is one patch the merge scan found merged.
type Merged struct {
	PatchID string
	Branch  string
	Commit  string
	// Pinned is the revision number the scan added because the merged
	// commit differs from every pushed revision (0: none added).
	Pinned int
}

// ErrTooBig stops a merge scan that reached its commit budget.
var ErrTooBig = errors.New("merge scan: more new commits than the budget")

// ForegroundBudget is how many new commits post-receive walks while the
// pusher waits: a merge scan costs a commit walk, which for a big import
// is a fair share of what the whole push costs. Updates beyond it come back
// from PostReceive as deferred, for a detached process to scan in full.
const ForegroundBudget = 10000

// PostReceive runs the merge scan for every branch the push moved that an
// open patch targets; other pushes cost one query. With budget > 0 an update
// that brings more new commits than that is not scanned here but returned
// in deferred (nothing recorded for it yet: Scan is all or nothing). So is
// every such update of a push whose pack holds more than 5×budget objects:
// git's walk of NEW ^OLD reads the whole range before its first commit
// comes out, so counting commits costs most of the scan; the pack that
// index-pack just wrote says the same for free.
func PostReceive(ctx context.Context, e *Env, updates []Update, budget int) (deferred []Update, err error) {
	start := time.Now()
	var heads []Update
	for _, u := range updates {
		if strings.HasPrefix(u.Ref, HeadsPrefix) && u.New != git.ZeroOID {
			heads = append(heads, u)
		}
	}
	if len(heads) == 0 {
		return nil, nil
	}
	bases, err := patches.OpenBases(ctx, e.DB.R(), e.Repo)
	if err != nil {
		return nil, err
	}
	var others map[string]string
	base := ""
	bigPack := -1 // objects in the push's pack, when it is too big; looked up once
	for _, u := range heads {
		branch := strings.TrimPrefix(u.Ref, HeadsPrefix)
		if !bases[branch] {
			continue
		}
		if budget > 0 && bigPack < 0 {
			bigPack = 0
			if n := RecentPackObjects(e.Git.Dir, u.New, e.Now()); n > 5*budget {
				bigPack = n
			}
		}
		if bigPack > 0 {
			e.logger().Info("merge scan", "PRINCIPAL", e.Principal, "REPO", e.Repo, "REF", u.Ref, "OLD_OID", u.Old, "NEW_OID", u.New,
				"OUTCOME", "deferred", "pack_objects", bigPack)
			e.say("collab: a push of %d objects: the merge scan of %s continues in the background", bigPack, branch)
			deferred = append(deferred, u)
			continue
		}
		revs := []string{u.New}
		if u.Old != git.ZeroOID {
			revs = append(revs, "^"+u.Old)
		} else {
			// A new branch: what no other branch or tag reached before this
			// push. refs/collab/* is never excluded: it reaches every pinned
			// revision, which are exactly the commits being looked for.
			if others == nil {
				if others, err = e.Git.Refs(ctx, HeadsPrefix, "refs/tags/"); err != nil {
					return nil, err
				}
				for _, pu := range updates {
					if !strings.HasPrefix(pu.Ref, HeadsPrefix) && !strings.HasPrefix(pu.Ref, "refs/tags/") {
						continue
					}
					if pu.Old == git.ZeroOID {
						delete(others, pu.Ref)
					} else {
						others[pu.Ref] = pu.Old
					}
				}
			}
			for ref, oid := range others {
				if ref != u.Ref {
					revs = append(revs, "^"+oid)
				}
			}
		}
		ms0 := time.Now()
		merged, err := e.Scan(ctx, branch, revs, u.Old, budget)
		log := e.logger().With("PRINCIPAL", e.Principal, "REPO", e.Repo, "REF", u.Ref, "OLD_OID", u.Old, "NEW_OID", u.New)
		if errors.Is(err, ErrTooBig) {
			log.Info("merge scan", "OUTCOME", "deferred", "DURATION_MS", ms(ms0), "budget", budget)
			e.say("collab: more than %d new commits on %s: the merge scan continues in the background", budget, branch)
			deferred = append(deferred, u)
			continue
		}
		if err != nil {
			log.Error("merge scan", "OUTCOME", "error", "DURATION_MS", ms(ms0), "error", err.Error())
			return deferred, err
		}
		if base == "" && len(merged) > 0 {
			base = e.baseURL(ctx)
		}
		for _, m := range merged {
			log.Info("merge recorded", "PATCH", m.PatchID, "OUTCOME", "merged", "commit", m.Commit, "pinned_revision", m.Pinned, "DURATION_MS", ms(start))
			line := "patch " + m.PatchID + " merged into " + branch + " as " + m.Commit
			if u := e.patchURL(base, m.PatchID); u != "" {
				line += ": " + u
			}
			e.say("%s", line)
		}
		if len(merged) == 0 {
			log.Info("merge scan", "OUTCOME", "none", "DURATION_MS", ms(ms0))
		}
	}
	return deferred, nil
}

// MovesBranches reports whether any update creates or moves a branch, the
// only updates the merge scan looks at.
func MovesBranches(us []Update) bool {
	for _, u := range us {
		if strings.HasPrefix(u.Ref, HeadsPrefix) && u.New != git.ZeroOID {
			return true
		}
	}
	return false
}

// RecentPackObjects returns the number of objects in the newest pack of
// the repository at dir when index-pack wrote it within the last minute and
// it holds object oid (a push of more than receive.unpackLimit objects keeps
// its pack, which holds the pushed tip), else 0. Getting it wrong only
// moves a merge scan to the background; what it records stays the same.
func RecentPackObjects(dir, oid string, now time.Time) int {
	packs := filepath.Join(dir, "objects", "pack")
	entries, err := os.ReadDir(packs)
	if err != nil {
		return 0
	}
	var newest string
	var at time.Time
	for _, en := range entries {
		if !strings.HasSuffix(en.Name(), ".idx") {
			continue
		}
		info, err := en.Info()
		if err == nil && info.ModTime().After(at) {
			newest, at = en.Name(), info.ModTime()
		}
	}
	if newest == "" || now.Sub(at) > time.Minute {
		return 0
	}
	f, err := os.Open(filepath.Join(packs, newest))
	if err != nil {
		return 0
	}
	defer f.Close()
	// Version 2 starts with "\377tOc" and the version; version 1 does not.
	// Then 256 fanout counts; the last is the number of objects.
	var head [8 + 256*4]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return 0
	}
	if string(head[:4]) != "\377tOc" || binary.BigEndian.Uint32(head[4:]) != 2 {
		return 0 // version 1: older than any git that runs proc-receive
	}
	want, err := hex.DecodeString(oid)
	if err != nil || len(want) != 20 {
		return 0
	}
	fan := head[8:]
	count := int(binary.BigEndian.Uint32(fan[255*4:]))
	lo := 0
	if want[0] > 0 {
		lo = int(binary.BigEndian.Uint32(fan[(int(want[0])-1)*4:]))
	}
	hi := int(binary.BigEndian.Uint32(fan[int(want[0])*4:]))
	// The sorted table of object names follows the fanout.
	var name [20]byte
	for lo < hi {
		mid := (lo + hi) / 2
		if _, err := f.ReadAt(name[:], int64(len(head)+mid*20)); err != nil {
			return 0
		}
		switch c := bytes.Compare(name[:], want); {
		case c == 0:
			return count
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0
}

// match is what the walk found for one open patch.
type match struct {
	commit  string
	parents []string
	number  int // pinned revision number; 0 for a trailer-only match
	fixes   []string
}

// Scan walks the commits revs selects (newest first, streamed) for those
// that equal a pinned revision of an open patch targeting branch or carry
// its Patch: trailer, and records those patches merged by e.Principal. A
// trailer match that differs from every pinned revision is first pinned as
// the patch's last revision, with base_commit its merge base with oldTip
// (the branch before the push; its first parent when there was none).
// Patches that are no longer open are left alone, so Scan is idempotent.
// With budget > 0, a walk longer than budget commits stops with ErrTooBig
// before anything is recorded.
func (e *Env) Scan(ctx context.Context, branch string, revs []string, oldTip string, budget int) ([]Merged, error) {
	open, pinned, err := patches.OpenTargeting(ctx, e.DB.R(), e.Repo, branch)
	if err != nil || len(open) == 0 {
		return nil, err
	}
	found := map[string]*match{}
	var order []string
	get := func(id string) *match {
		m := found[id]
		if m == nil {
			m = &match{}
			found[id] = m
			order = append(order, id)
		}
		return m
	}
	walked := 0
	err = e.Git.Walk(ctx, revs, func(c git.Commit) error {
		if walked++; budget > 0 && walked > budget {
			return ErrTooBig
		}
		for _, p := range pinned[c.OID] {
			m := get(p.PatchID)
			if p.Number > m.number {
				m.commit, m.parents, m.number = c.OID, c.Parents, p.Number
			}
			m.fixes = append(m.fixes, c.Fixes...)
		}
		for _, t := range c.Patch {
			if !open[t] {
				continue
			}
			m := get(t)
			if m.commit == "" {
				m.commit, m.parents = c.OID, c.Parents
			}
			if !isPinned(pinned[c.OID], t) {
				m.fixes = append(m.fixes, c.Fixes...)
			}
		}
		return nil
	})
	if errors.Is(err, ErrTooBig) {
		return nil, err
	}
	if err != nil {
		return nil, fault.Wrap(err, "merge scan failed")
	}
	if len(order) == 0 {
		return nil, nil
	}
	bases := map[string]string{}
	for _, id := range order {
		m := found[id]
		if m.number > 0 {
			continue
		}
		b := ""
		if git.IsOID(oldTip) && oldTip != git.ZeroOID {
			if mb, ok, err := e.Git.MergeBase(ctx, m.commit, oldTip); err != nil {
				return nil, fault.Wrap(err, "merge scan failed")
			} else if ok {
				b = mb
			}
		}
		if b == "" {
			b = m.commit
			if len(m.parents) > 0 {
				b = m.parents[0]
			}
		}
		bases[id] = b
	}
	now := e.Now()
	var out []Merged
	err = e.DB.Write(ctx, func(tx *sql.Tx) error {
		out = nil
		var refs []git.RefUpdate
		for _, id := range order {
			m := found[id]
			p, ok, err := patches.Lookup(ctx, tx, e.Repo, id)
			if err != nil {
				return err
			}
			if !ok || p.State != patches.Open || p.Base != branch {
				continue
			}
			rec := Merged{PatchID: id, Branch: branch, Commit: m.commit}
			if m.number == 0 {
				rev, added, err := patches.AddRevision(ctx, tx, e.Repo, id, m.commit, bases[id], e.Principal, now)
				if err != nil {
					return err
				}
				if added {
					rec.Pinned = rev.Number
					refs = append(refs, git.RefUpdate{Ref: collabref.RevRef(id, m.commit), New: m.commit, Old: git.ZeroOID},
						git.RefUpdate{Ref: collabref.HeadRef(id), New: m.commit})
				}
			}
			if err := e.linkFixes(ctx, tx, id, m.fixes); err != nil {
				return err
			}
			merged, err := patches.RecordMerge(ctx, tx, e.Repo, id, branch, m.commit, e.Principal, now)
			if err != nil {
				return err
			}
			if merged {
				out = append(out, rec)
			}
		}
		return e.Git.UpdateRefs(ctx, refs)
	})
	return out, err
}

func isPinned(ps []patches.Pinned, id string) bool {
	for _, p := range ps {
		if p.PatchID == id {
			return true
		}
	}
	return false
}

// linkFixes links the issues that Fixes: trailers of merged commits name,
// so that RecordMerge closes them. A trailer naming no issue of this
// repository (or not an id at all: Fixes: is also used for commits) is
// skipped; the holder rule does not apply to merges.
func (e *Env) linkFixes(ctx context.Context, tx *sql.Tx, patchID string, fixes []string) error {
	seen := map[string]bool{}
	for _, f := range fixes {
		f = strings.ToLower(f)
		if seen[f] {
			continue
		}
		seen[f] = true
		id, err := issues.Resolve(ctx, tx, e.Repo, f)
		if err != nil {
			if k := fault.KindOf(err); k == fault.NotFound || k == fault.Usage {
				continue
			}
			return err
		}
		if _, err := patches.LinkIssue(ctx, tx, e.Repo, patchID, id); err != nil {
			return err
		}
	}
	return nil
}
