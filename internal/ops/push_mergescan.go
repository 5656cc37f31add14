package ops

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/submit"
)

// Merged is one patch the merge scan found merged.
type Merged struct {
	PatchID string
	Branch  string
	Commit  string
	// Pinned is the revision number the scan added because the merged
	// commit differs from every pushed revision (0: none added).
	Pinned int
	// By is whom the merge is credited to.
	By string
	// Closed are the issues the merge closed (those the patch links that
	// were open); Kept those a lease of someone else kept open.
	Closed []string
	Kept   []issues.Kept
	// Content is patches.ContentDiffers where the commit only carries the
	// patch's trailer; "" or same otherwise.
	Content string
}

// ErrTooBig stops a merge scan that reached its commit budget.
var ErrTooBig = errors.New("merge scan: more new commits than the budget")

// ForegroundBudget is how many new commits post-receive walks while the
// pusher waits: a merge scan costs a commit walk, which for a big import
// is a fair share of what the whole push costs. Updates beyond it come back
// from PostReceive as deferred, for a detached process to scan in full.
const ForegroundBudget = 10000

// PostReceive runs the merge scan for every branch the push moved that an
// open patch targets; other pushes cost one query. The scan starts where
// the last completed scan of the branch ended (BranchScans): when that is
// not this push's old tip, a scan was missed (a killed post-receive) and
// the missed pushes are scanned first, each credited to its pusher as the
// branch's reflog names it (or access.Unknown).
//
// With budget > 0 an update that brings more new commits than that is not
// scanned here but returned in deferred (nothing recorded for it yet: Scan
// is all or nothing). So is every such update of a push whose pack holds
// more than 5×budget objects: git's walk of NEW ^OLD reads the whole range
// before its first commit comes out, so counting commits costs most of the
// scan; the pack that index-pack just wrote says the same for free.
func (e *Push) PostReceive(ctx context.Context, updates []Update, budget int) (deferred []Update, err error) {
	start := time.Now()
	heads := branchMoves(updates)
	if len(heads) == 0 {
		return nil, nil
	}
	if e.Tokens == nil && pushcheck.CarriesLease(e.Options) {
		// Pre-receive checked them; a takeover since is what the record
		// checks again (issues.CloseFenced).
		if opts, err := pushcheck.ParseOptions(e.Options); err == nil {
			if e.Tokens, _, err = e.leaseTokens(ctx, e.DB.R(), heads, opts); err != nil {
				return nil, err
			}
		}
	}
	// A push of one branch (nearly every push) reads the open patches
	// targeting it at once, which says whether there are any and is what
	// its scan reads first; one of several branches asks which branches
	// have open patches first, in one query for all.
	var bases map[string]bool
	if len(heads) > 1 {
		if bases, err = patches.OpenBases(ctx, e.DB.R(), e.Repo); err != nil {
			return nil, err
		}
	}
	scanned, err := patches.BranchScans(ctx, e.DB.R(), e.Repo)
	if err != nil {
		return nil, err
	}
	var others map[string]string
	base := ""
	bigPack := -1 // objects in the push's pack, when it is too big; looked up once
	for _, u := range heads {
		branch := strings.TrimPrefix(u.Ref, HeadsPrefix)
		var tg *targets
		has := bases[branch]
		if bases == nil {
			open, pinned, err := patches.OpenTargeting(ctx, e.DB.R(), e.Repo, branch)
			if err != nil {
				return nil, err
			}
			tg, has = &targets{open: open, pinned: pinned}, len(open) > 0
		}
		if !has {
			if _, ok := scanned[branch]; ok {
				// No open patch left to find: the next one starts afresh.
				if err := e.DB.Write(ctx, func(tx store.Tx) error { return patches.ForgetScans(ctx, tx, e.Repo, branch) }); err != nil {
					return nil, err
				}
			}
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
		from, has := scanned[branch]
		segs, err := e.segmentsOf(ctx, u, branch, from, has, tg, updates, &others)
		if err != nil {
			return deferred, err
		}
		log := e.logger().With("PRINCIPAL", e.Principal, "REPO", e.Repo, "REF", u.Ref, "OLD_OID", u.Old, "NEW_OID", u.New)
		ms0 := time.Now()
		taken := e.prefetched
		merged, err := e.scanSegments(ctx, branch, segs, from, budget)
		if e.prefetched > taken {
			log = log.With("WALK", "prefetched")
		}
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
		if len(segs) > 1 {
			log.Warn("merge scan", "OUTCOME", "healed", "scanned_from", from, "missed_pushes", len(segs)-1)
		}
		if base == "" && len(merged) > 0 {
			base = e.baseURL(ctx)
		}
		e.tellMerged(log, branch, base, merged, start)
		if len(merged) == 0 {
			log.Info("merge scan", "OUTCOME", "none", "DURATION_MS", ms(ms0))
		}
	}
	return deferred, nil
}

// segmentsOf are the moves of branch to scan for update u: first those
// the scan missed since from, its scanned tip (has: there is one), as the
// reflog names them, then u itself, which takes tg (the open patches read
// for it) where nothing comes before it. u creating the branch excludes
// what the push's other refs reached before it (others, read once a push).
func (e *Push) segmentsOf(ctx context.Context, u Update, branch, from string, has bool, tg *targets, updates []Update, others *map[string]string) ([]Segment, error) {
	var segs []Segment
	if has && from != u.Old && u.Old != git.ZeroOID {
		var err error
		if segs, err = e.missed(ctx, branch, from, u.Old); err != nil {
			return nil, err
		}
	}
	own := Segment{Old: u.Old, New: u.New, By: e.Principal}
	if len(segs) == 0 {
		// The first scan of this run: nothing recorded since tg was read.
		own.targets = tg
	}
	if u.Old == git.ZeroOID {
		// A new branch: what no other branch or tag reached before this
		// push. refs/collab/* is never excluded: it reaches every pinned
		// revision, which are exactly the commits being looked for.
		if *others == nil {
			var err error
			if *others, err = e.tipsBefore(ctx, updates); err != nil {
				return nil, err
			}
		}
		for ref, oid := range *others {
			if ref != u.Ref {
				own.Exclude = append(own.Exclude, oid)
			}
		}
	}
	return append(segs, own), nil
}

// branchMoves are the updates that move or create a branch.
func branchMoves(updates []Update) []Update {
	var heads []Update
	for _, u := range updates {
		if strings.HasPrefix(u.Ref, HeadsPrefix) && u.New != git.ZeroOID {
			heads = append(heads, u)
		}
	}
	return heads
}

// tipsBefore is every branch and tag as it was before the push: what a
// new branch's scan excludes.
func (e *Push) tipsBefore(ctx context.Context, updates []Update) (map[string]string, error) {
	tips, err := e.Git.Refs(ctx, HeadsPrefix, "refs/tags/")
	if err != nil {
		return nil, err
	}
	for _, u := range updates {
		if !strings.HasPrefix(u.Ref, HeadsPrefix) && !strings.HasPrefix(u.Ref, "refs/tags/") {
			continue
		}
		if u.Old == git.ZeroOID {
			delete(tips, u.Ref)
		} else {
			tips[u.Ref] = u.Old
		}
	}
	return tips, nil
}

// tellMerged logs the merges a scan of branch recorded and tells the
// pusher of each, with the issues it closed or left open; base is the web
// UI's URL ("" for none).
func (e *Push) tellMerged(log *slog.Logger, branch, base string, merged []Merged, start time.Time) {
	for _, m := range merged {
		log.Info("merge recorded", "PATCH", m.PatchID, "OUTCOME", "merged", "commit", m.Commit, "by", m.By, "pinned_revision", m.Pinned, "content", m.Content, "DURATION_MS", ms(start))
		line := "patch " + m.PatchID + " merged into " + branch + " as " + m.Commit
		if u := e.patchURL(base, m.PatchID); u != "" {
			line += ": " + u
		}
		e.say("%s", line)
		if m.Content == patches.ContentDiffers {
			e.say("patch %s: %s differs in content from every revision; the issues the patch links stay open", m.PatchID, m.Commit)
		}
		for _, is := range m.Closed {
			line := "closed issue " + is
			if base != "" {
				line += ": " + base + "/" + reponame.Display(e.Repo) + "/-/issues/" + is
			}
			e.say("%s", line)
		}
		for _, k := range m.Kept {
			log.Info("not closing", "PATCH", m.PatchID, "ISSUE", k.IssueID, "OUTCOME", "kept", "holder", k.Holder, "commit", m.Commit)
			e.say("not closing %s: %s", k.IssueID, k.Why())
		}
	}
}

// Segment is one move of a branch from Old to New, by By; its commits are
// NEW ^OLD (^Exclude too, for a branch created from nothing).
type Segment struct {
	Old, New string
	By       string
	Exclude  []string
	// Strategy and Submitted say how the merges found are recorded: a
	// submit's strategy, or "" for a push.
	Strategy  string
	Submitted bool
	// targets, when set, are the branch's open patches as read just
	// before, for the scan of this segment not to read them again.
	targets *targets
}

// targets are the open patches targeting a branch and their pinned
// revisions by commit (patches.OpenTargeting).
type targets struct {
	open   map[string]bool
	pinned map[string][]patches.Pinned
}

func (s Segment) revs() []string {
	revs := []string{s.New}
	if s.Old != git.ZeroOID && s.Old != "" {
		revs = append(revs, "^"+s.Old)
	}
	for _, x := range s.Exclude {
		revs = append(revs, "^"+x)
	}
	return revs
}

// scanSegments scans segs in order and, with the last, records its New as
// the branch's scanned tip (where that still is from). A segment too big
// for budget stops everything (ErrTooBig) before the scanned tip moves.
func (e *Push) scanSegments(ctx context.Context, branch string, segs []Segment, from string, budget int) ([]Merged, error) {
	var out []Merged
	for i, s := range segs {
		r := ScanRange{Branch: branch, Revs: s.revs(), OldTip: s.Old, By: s.By, Strategy: s.Strategy, Submitted: s.Submitted, NewTip: s.New, targets: s.targets}
		if i == len(segs)-1 {
			r.From, r.Done = from, s.New
		}
		merged, err := e.Scan(ctx, r, budget)
		if err != nil {
			return out, err
		}
		out = append(out, merged...)
	}
	return out, nil
}

// missed returns the branch moves from `from` to `to` that the merge scan
// did not see, from the branch's reflog (serve has git write it with the
// pusher as committer: hookenv.PusherOf), oldest first; where the reflog
// does not chain from `from` to `to`, one move credited to access.Unknown.
func (e *Push) missed(ctx context.Context, branch, from, to string) ([]Segment, error) {
	if ok, err := e.Git.HasObject(ctx, from); err != nil || !ok {
		// The scanned tip is gone (a rewritten branch, pruned): the push's
		// own range is all there is to scan.
		return nil, err
	}
	log, err := e.Git.Reflog(branch)
	if err != nil {
		return nil, err
	}
	return chain(log, from, to), nil
}

// chain follows reflog entries from `from` to `to`.
func chain(log []git.ReflogEntry, from, to string) []Segment {
	start := -1
	for i, en := range log {
		if en.New == from {
			start = i
		}
	}
	if start >= 0 {
		var segs []Segment
		cur := from
		for _, en := range log[start+1:] {
			if en.Old != cur || en.Old == git.ZeroOID {
				break
			}
			seg := Segment{Old: en.Old, New: en.New, By: hookenv.PusherOf(en.Name, en.Email)}
			if strategy, ok := submit.ReflogStrategy(en.Message); ok && seg.By != access.Unknown {
				seg.Strategy, seg.Submitted = strategy, true
			}
			segs = append(segs, seg)
			if cur = en.New; cur == to {
				return segs
			}
		}
	}
	return []Segment{{Old: from, New: to, By: access.Unknown}}
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

// ScanRange is one merge scan of Branch: the commits Revs selects (as git
// log --stdin takes them: NEW, ^OLD…), credited to By, with OldTip the
// branch before they arrived. Done, when set, is recorded as the branch's
// scanned tip in the scan's own transaction, where that still is From
// (or none is recorded yet).
type ScanRange struct {
	Branch     string
	Revs       []string
	OldTip     string
	By         string
	From, Done string
	// DryRun only reports what the scan would record (fsck --dry-run).
	DryRun bool
	// Strategy and Submitted are recorded with each merge found (a
	// submit's); "" is patches.ByPush.
	Strategy  string
	Submitted bool
	// NewTip is what the branch moved to, recorded with each merge ("":
	// unknown, as in a full scan).
	NewTip string
	// targets: see Segment.
	targets *targets
}

// Scan walks the commits r.Revs selects (newest first, streamed) for those
// that equal a pinned revision of an open patch targeting the branch or
// carry its Patch: trailer (on a commit without one: its Change-Id), and records those patches merged by r.By. A
// trailer match that differs from every pinned revision is first pinned as
// the patch's last revision, with base_commit its merge base with r.OldTip
// (its first parent when there was none); its refs are written after the
// transaction, under the refs lock (see revise). Patches that are no
// longer open are left alone, so Scan is idempotent. With budget > 0, a
// walk longer than budget commits stops with ErrTooBig before anything is
// recorded.
func (e *Push) Scan(ctx context.Context, r ScanRange, budget int) ([]Merged, error) {
	f, err := e.find(ctx, r, budget)
	if err != nil {
		return nil, err
	}
	if r.DryRun {
		var out []Merged
		for _, id := range f.order {
			out = append(out, Merged{PatchID: id, Branch: r.Branch, Commit: f.found[id].commit, By: r.By})
		}
		return out, nil
	}
	if len(f.order) == 0 {
		// Nothing to record but the progress; a walk that found nothing new
		// (a tip already scanned past) must not move it back.
		if r.Done == "" || (f.walked == 0 && f.open > 0) {
			return nil, nil
		}
		return nil, e.DB.Write(ctx, func(tx store.Tx) error {
			return patches.RecordScanned(ctx, tx, e.Repo, r.Branch, r.From, r.Done, e.Now())
		})
	}
	if err := e.trailerMatches(ctx, r, f); err != nil {
		return nil, err
	}
	return e.record(ctx, r, f)
}

// found is what a merge scan's walk found: the matches by patch id, in
// the order first met, and how many commits it walked.
type found struct {
	found  map[string]*match
	order  []string
	walked int
	open   int // open patches targeting the branch
	// bases and content are a trailer-only match's (trailerMatches): the
	// base its pinned revision gets, and whether its content is the
	// patch's.
	bases, content map[string]string
}

// find walks r.Revs for the commits that are a pinned revision of an open
// patch targeting r.Branch, or carry one's trailer.
func (e *Push) find(ctx context.Context, r ScanRange, budget int) (*found, error) {
	var open map[string]bool
	var pinned map[string][]patches.Pinned
	if t := r.targets; t != nil {
		open, pinned = t.open, t.pinned
	} else {
		var err error
		if open, pinned, err = patches.OpenTargeting(ctx, e.DB.R(), e.Repo, r.Branch); err != nil {
			return nil, err
		}
	}
	f := &found{found: map[string]*match{}, open: len(open), bases: map[string]string{}, content: map[string]string{}}
	get := func(id string) *match {
		m := f.found[id]
		if m == nil {
			m = &match{}
			f.found[id] = m
			f.order = append(f.order, id)
		}
		return m
	}
	if len(open) == 0 {
		return f, nil
	}
	err := e.walk(ctx, r.Revs, func(c git.Commit) error {
		if f.walked++; budget > 0 && f.walked > budget {
			return ErrTooBig
		}
		for _, p := range pinned[c.OID] {
			m := get(p.PatchID)
			if p.Number > m.number {
				m.commit, m.parents, m.number = c.OID, c.Parents, p.Number
			}
			m.fixes = append(m.fixes, c.Fixes...)
		}
		for _, t := range TrailerIDs(c) {
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
	return f, nil
}

// trailerMatches reads what a match by trailer alone (no pinned revision)
// needs before it is recorded: the base of the revision it gets pinned
// as (its merge base with r.OldTip, else its first parent), and whether
// its content is the patch's work at all (anyone can write the trailer),
// which decides whether the patch's linked issues close through it. Asked
// only here, off the path of a push that merges pinned revisions.
func (e *Push) trailerMatches(ctx context.Context, r ScanRange, f *found) error {
	for _, id := range f.order {
		m := f.found[id]
		if m.number > 0 {
			continue
		}
		b := ""
		if git.IsOID(r.OldTip) && r.OldTip != git.ZeroOID {
			if mb, ok, err := e.Git.MergeBase(ctx, m.commit, r.OldTip); err != nil {
				return fault.Wrap(err, "merge scan failed")
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
		f.bases[id] = b
		c, err := e.contentOf(ctx, id, m.commit, m.parents)
		if err != nil {
			return fault.Wrap(err, "merge scan failed")
		}
		f.content[id] = c
	}
	return nil
}

// record records the merges f found in one transaction (with the scan's
// progress, r.Done), pinning trailer matches as revisions, whose refs are
// written after the commit under the refs lock, like a push's.
func (e *Push) record(ctx context.Context, r ScanRange, f *found) ([]Merged, error) {
	now := e.Now()
	unlock, err := patches.LockRefs(ctx, e.Git.Dir)
	if err != nil {
		return nil, fault.Wrap(err, "merge scan failed")
	}
	defer unlock()
	var out []Merged
	var refs []git.RefUpdate
	err = e.DB.Write(ctx, func(tx store.Tx) error {
		out, refs = nil, nil
		for _, id := range f.order {
			m := f.found[id]
			p, ok, err := patches.Lookup(ctx, tx, e.Repo, id)
			if err != nil {
				return err
			}
			if !ok || p.State != patches.Open || p.Base != r.Branch {
				continue
			}
			rec := Merged{PatchID: id, Branch: r.Branch, Commit: m.commit, By: r.By}
			if m.number == 0 {
				rev, added, err := patches.AddRevision(ctx, tx, e.Repo, id, m.commit, f.bases[id], r.By, now)
				if err != nil {
					return err
				}
				if added {
					rec.Pinned = rev.Number
					revs, err := patches.Revisions(ctx, tx, e.Repo, id)
					if err != nil {
						return err
					}
					refs = append(refs, patches.PatchRefs(id, revs)...)
				}
			}
			comp := patches.Completion{Closer: e.closer(ctx, tx, id, r, m.commit)}
			rec.Content = f.content[id]
			if rec.Content == patches.ContentDiffers {
				// Only the commit's own Fixes: count, fenced as any.
				comp.OwnOnly = true
				if comp.Own, err = e.resolveFixes(ctx, tx, m.fixes); err != nil {
					return err
				}
			} else if err := e.linkFixes(ctx, tx, id, m.fixes); err != nil {
				return err
			}
			done, err := patches.RecordMergeFenced(ctx, tx, e.Repo, id,
				patches.Merge{Branch: r.Branch, Commit: m.commit, BranchTip: r.NewTip, By: r.By, Strategy: r.Strategy, Submitted: r.Submitted, Content: rec.Content}, comp, now)
			if err != nil {
				return err
			}
			if done.Merged {
				rec.Closed, rec.Kept = done.Closed, done.Kept
				out = append(out, rec)
			}
		}
		if r.Done != "" {
			return patches.RecordScanned(ctx, tx, e.Repo, r.Branch, r.From, r.Done, now)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := e.Git.UpdateRefs(ctx, refs); err != nil {
		return out, fault.Wrap(err, "merge recorded, but the refs of its pinned revision could not be written (the sweep or fsck restores them)")
	}
	return out, nil
}

func isPinned(ps []patches.Pinned, id string) bool {
	for _, p := range ps {
		if p.PatchID == id {
			return true
		}
	}
	return false
}

// closer is how the merge of patch id at commit, found by r, completes
// the issues it fixes: fenced (issues.CloseFenced) by who made it, whose
// admin level is asked only for an issue someone else holds, and by the
// lease tokens the pusher's own move carried.
func (e *Push) closer(ctx context.Context, tx store.Querier, id string, r ScanRange, commit string) issues.Closer {
	c := issues.Closer{
		What: "the merge of patch " + id + " into " + r.Branch + " as " + commit + " by " + r.By,
		Admin: func() (bool, error) {
			lvl, err := access.Of(ctx, tx, r.By, e.Repo)
			return lvl >= access.Admin, err
		},
	}
	if r.By == e.Principal {
		c.Tokens = e.Tokens
	}
	return c
}

// contentOf is ContentOf in this hook's repository.
func (e *Push) contentOf(ctx context.Context, id, commit string, parents []string) (string, error) {
	return ContentOf(ctx, e.Git, e.DB.R(), e.Repo, id, commit, parents)
}

// ContentOf says whether commit (with its parents), credited to patch id
// of repo by its trailer or by hand, is one of the patch's revisions in
// content (patches.ContentSame) or not (ContentDiffers): a revision's own
// commit, or its diff against its first parent has the patch-id (git
// patch-id --stable) of a revision's tip commit or of a revision's whole
// diff (base_commit..commit, as a squash makes it).
func ContentOf(ctx context.Context, g git.Repo, q store.Querier, repo, id, commit string, parents []string) (string, error) {
	revs, err := patches.Revisions(ctx, q, repo, id)
	if err != nil {
		return "", err
	}
	for _, rev := range revs {
		if rev.Commit == commit {
			return patches.ContentSame, nil
		}
	}
	from := ""
	if len(parents) > 0 {
		from = parents[0]
	}
	want, err := g.PatchID(ctx, from, commit)
	if err != nil {
		return "", err
	}
	var tips []string
	for _, rev := range revs {
		if git.IsOID(rev.BaseCommit) {
			if pid, err := g.PatchID(ctx, rev.BaseCommit, rev.Commit); err != nil {
				return "", err
			} else if pid == want {
				return patches.ContentSame, nil
			}
		}
		tips = append(tips, rev.Commit)
	}
	if len(tips) == 0 {
		return patches.ContentDiffers, nil
	}
	cs, err := g.Commits(ctx, tips...)
	if err != nil {
		return "", err
	}
	for _, c := range cs {
		from := ""
		if len(c.Parents) > 0 {
			from = c.Parents[0]
		}
		if pid, err := g.PatchID(ctx, from, c.OID); err != nil {
			return "", err
		} else if pid == want {
			return patches.ContentSame, nil
		}
	}
	return patches.ContentDiffers, nil
}

// resolveFixes returns the issues of this repository that Fixes: trailers
// name, once each. A trailer naming no issue here (or not an id at all:
// Fixes: is also used for commits) is skipped.
func (e *Push) resolveFixes(ctx context.Context, tx store.Querier, fixes []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
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
			return nil, err
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// linkFixes links the issues that Fixes: trailers of merged commits name,
// so that the merge closes them (fenced, issues.CloseFenced); the holder
// rule of a refs/for push does not apply to links made by merges.
func (e *Push) linkFixes(ctx context.Context, tx store.Tx, patchID string, fixes []string) error {
	ids, err := e.resolveFixes(ctx, tx, fixes)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := patches.LinkIssue(ctx, tx, e.Repo, patchID, id); err != nil {
			return err
		}
	}
	return nil
}
