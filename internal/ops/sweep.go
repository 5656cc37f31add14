package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// Sweeper makes up, every few seconds in collab-web, what hooks killed
// mid-way left undone, so that no operator is needed: merge scans of
// branches that moved past their scanned tip (missed post-receives), and
// the refs of recently recorded revisions (a proc-receive or merge scan
// killed between its commit and its ref update). It also packs
// refs/collab/ when many loose refs have piled up there: git's
// connectivity check after every push reads each loose ref.
type Sweeper struct {
	Root forge.Root
	DB   *store.DB
	Log  *slog.Logger
	Now  func() time.Time
	// Grace leaves a branch that moved less than Grace ago to its own
	// post-receive (0: 10 s), so that its pusher sees the merge lines.
	Grace time.Duration
	// PackLoose is the number of loose refs under refs/collab/ from which
	// a repository's refs are packed (0: DefaultPackLoose).
	PackLoose int

	// since: revisions recorded from then on have their refs checked.
	since time.Time
}

// SweepReport says what one sweep did.
type SweepReport struct {
	Healed  int // branches whose missed scans were made up
	Merged  int // merges those scans recorded
	Refs    int // revision and head refs written
	Packed  int // repositories whose refs were packed
	Skipped int // repositories that could not be swept (logged)
}

// Run sweeps every `every` until ctx ends.
func (s *Sweeper) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if rep, err := s.Once(ctx); err != nil && ctx.Err() == nil {
			s.log().Error("sweep", "OUTCOME", "error", "error", err.Error())
		} else if rep != (SweepReport{}) {
			s.log().Info("sweep", "OUTCOME", "repaired", "healed", rep.Healed, "merged", rep.Merged, "refs", rep.Refs,
				"packed", rep.Packed, "skipped", rep.Skipped)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Sweeper) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// Once sweeps every repository once. A repository that fails is logged
// and skipped; the others are still swept.
func (s *Sweeper) Once(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	now := s.Now()
	if s.since.IsZero() {
		s.since = now.Add(-24 * time.Hour)
	}
	// A revision committed a little before `now` by a clock that ran
	// behind still gets looked at.
	since := s.since.Add(-time.Minute)
	bases, err := patches.OpenBasesByRepo(ctx, s.DB.R())
	if err != nil {
		return rep, err
	}
	recent, err := patches.RecentlyRevised(ctx, s.DB.R(), since)
	if err != nil {
		return rep, err
	}
	keys := map[string]bool{}
	for k := range bases {
		keys[k] = true
	}
	for k := range recent {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, key := range sorted {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		if err := s.repo(ctx, key, bases[key], recent[key], &rep); err != nil {
			rep.Skipped++
			s.log().Warn("sweep", "REPO", key, "OUTCOME", "error", "error", err.Error())
		}
	}
	s.since = now
	return rep, nil
}

func (s *Sweeper) repo(ctx context.Context, key string, branches, recent []string, rep *SweepReport) error {
	dir, err := reponame.Dir(s.Root.ReposDir(), key)
	if err != nil {
		return err
	}
	e := &Push{Root: s.Root, DB: s.DB, Repo: key, Git: git.Open(dir), Principal: access.Unknown,
		Stderr: io.Discard, Log: s.Log, Now: s.Now}
	if len(branches) > 0 {
		if err := s.heal(ctx, e, branches, rep); err != nil {
			return err
		}
	}
	if len(recent) > 0 {
		n, err := RestoreRefs(ctx, s.DB.R(), e.Git, key, recent)
		rep.Refs += n
		if err != nil {
			return err
		}
	}
	limit := s.PackLoose
	if limit <= 0 {
		limit = DefaultPackLoose
	}
	if len(recent) > 0 && LooseRefs(dir, limit) >= limit {
		if err := PackRefs(ctx, e.Git); err != nil {
			return err
		}
		rep.Packed++
	}
	return nil
}

// heal makes up the merge scans of branches that moved past their scanned
// tip more than Grace ago.
func (s *Sweeper) heal(ctx context.Context, e *Push, branches []string, rep *SweepReport) error {
	tips, err := e.Git.Refs(ctx, HeadsPrefix)
	if err != nil {
		return err
	}
	scanned, err := patches.BranchScans(ctx, s.DB.R(), e.Repo)
	if err != nil {
		return err
	}
	grace := s.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	for _, b := range branches {
		tip, ok := tips[HeadsPrefix+b]
		if !ok {
			continue
		}
		from, has := scanned[b]
		if has && from == tip {
			continue
		}
		if moved, err := lastMove(e.Git, b); err != nil {
			return err
		} else if s.Now().Sub(moved) < grace {
			continue // its post-receive may still be at work
		}
		var segs []Segment
		if has {
			if segs, err = e.missed(ctx, b, from, tip); err != nil {
				return err
			}
		}
		if len(segs) == 0 {
			// No starting point (a patch older than branch_scans, or a
			// scanned tip that is gone): start from here; fsck scans the
			// whole history.
			if err := s.DB.Write(ctx, func(tx store.Tx) error {
				return patches.RecordScanned(ctx, tx, e.Repo, b, from, tip, s.Now())
			}); err != nil {
				return err
			}
			continue
		}
		merged, err := e.scanSegments(ctx, b, segs, from, 0)
		if err != nil {
			return err
		}
		rep.Healed++
		rep.Merged += len(merged)
		for _, m := range merged {
			e.logger().Warn("merge recorded", "REPO", e.Repo, "REF", HeadsPrefix+b, "PATCH", m.PatchID, "OUTCOME", "merged",
				"commit", m.Commit, "by", m.By, "pinned_revision", m.Pinned, "healed", true)
		}
	}
	return nil
}

// lastMove is when branch last moved as its reflog says (zero without one).
func lastMove(g git.Repo, branch string) (time.Time, error) {
	log, err := g.Reflog(branch)
	if err != nil || len(log) == 0 {
		return time.Time{}, err
	}
	return log[len(log)-1].Time, nil
}

// RestoreRefs writes the refs that the revisions of patch ids of repo
// should have (PatchRefs) where they are missing or wrong, under the refs
// lock, and returns how many it wrote.
func RestoreRefs(ctx context.Context, q store.Querier, g git.Repo, repo string, ids []string) (int, error) {
	unlock, err := patches.LockRefs(ctx, g.Dir)
	if err != nil {
		return 0, err
	}
	defer unlock()
	prefixes := make([]string, len(ids))
	for i, id := range ids {
		prefixes[i] = collabref.Patches + id + "/"
	}
	have, err := g.Refs(ctx, prefixes...)
	if err != nil {
		return 0, err
	}
	var fix []git.RefUpdate
	for _, id := range ids {
		revs, err := patches.Revisions(ctx, q, repo, id)
		if err != nil {
			return 0, err
		}
		for _, u := range patches.PatchRefs(id, revs) {
			if have[u.Ref] != u.New {
				fix = append(fix, u)
			}
		}
	}
	if len(fix) == 0 {
		return 0, nil
	}
	// A revision whose commit is gone cannot get its ref back; fsck says so.
	var ok []git.RefUpdate
	for _, u := range fix {
		if has, err := g.HasObject(ctx, u.New); err != nil {
			return 0, err
		} else if has {
			ok = append(ok, u)
		}
	}
	return len(ok), g.UpdateRefs(ctx, ok)
}

// DefaultPackLoose is low because every push pays for each loose ref
// (about 0.04 ms in git's connectivity check) while a pack costs the sweep
// about 14 ms with 10,000 refs: packing every 32 keeps a push's share of
// both under 1 ms, where 256 left pushes 5 ms slower on average.
const DefaultPackLoose = 32

// LooseRefs counts the loose refs under refs/collab/ of the repository at
// dir, stopping at limit.
func LooseRefs(dir string, limit int) int {
	n := 0
	stop := errors.New("enough")
	_ = filepath.WalkDir(filepath.Join(dir, "refs", "collab"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if n++; n >= limit {
				return stop
			}
		}
		return nil
	})
	return n
}

// PackRefs packs the repository's refs (git pack-refs --all, what git gc
// does), under the refs lock: a packed refs/collab/ costs git's
// connectivity check after every push far less than loose files.
func PackRefs(ctx context.Context, g git.Repo) error {
	unlock, err := patches.LockRefs(ctx, g.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := g.Run(ctx, nil, "pack-refs", "--all"); err != nil {
		return fmt.Errorf("pack refs of %s: %w", g.Dir, err)
	}
	return nil
}
