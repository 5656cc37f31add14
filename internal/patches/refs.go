package patches

import (
	"context"
	"path/filepath"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/flock"
	"github.com/collab-forge/collab/internal/git"
)

// LockName is the file in a repository whose flock orders the writes to
// its refs/collab/patches/ refs: held around a revision's transaction and
// the ref update that follows it, so that of two pushes of one patch the
// later revision's head always lands last.
const LockName = "collab-refs.lock"

// LockRefs takes the repository's refs lock (never inside a db.Write: the
// order is refs lock, then the database's). A killed holder's lock is
// released by the kernel.
func LockRefs(ctx context.Context, dir string) (unlock func(), err error) {
	return flock.Lock(ctx, filepath.Join(dir, LockName), 0o640)
}

// PatchRefs are the refs patch id must have for its revisions revs (in
// number order): every revision pinned, head on the last. None carries an
// old value: a ref some killed run left naming the same commit is simply
// adopted, and one naming another commit never blocks (a revision ref's
// name says its commit, so it is only ever set to that).
func PatchRefs(id string, revs []Revision) []git.RefUpdate {
	if len(revs) == 0 {
		return nil
	}
	us := make([]git.RefUpdate, 0, len(revs)+1)
	for _, r := range revs {
		us = append(us, git.RefUpdate{Ref: collabref.RevRef(id, r.Commit), New: r.Commit})
	}
	return append(us, git.RefUpdate{Ref: collabref.HeadRef(id), New: revs[len(revs)-1].Commit})
}
