package push

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
)

// prefetchCap bounds the commits one prefetched walk keeps: a push of more
// new commits than that is rare, and its scan walks again as without.
const prefetchCap = 1000

// errCapped stops a prefetched walk at prefetchCap.
var errCapped = errors.New("prefetch: more commits than it keeps")

// Prefetch runs the merge scan's commit walks of one push ahead of its
// post-receive. Once pre-receive has passed, collab-hook-fast hands the
// push's updates to serve (relay.Prefetch), which starts the walks on the
// quarantined objects: git then moves those objects in, updates the refs
// and starts post-receive while the walks run, where the scan would
// otherwise start its walk only then, with the pusher waiting.
//
// A walk's commits are the same wherever it runs: NEW ^OLD names objects,
// which do not change, and the push moves no ref a walk reads (Start
// prefetches only pushes that update branches alone, so no replace ref
// moves). A walk that could not run in the quarantine (git removed it as
// the walk started) runs outside it, where the objects went; one that
// still failed, or was cut short, is not used, and post-receive walks as
// without.
//
// The zero value is not usable: NewPrefetch. A nil *Prefetch prefetches
// nothing.
type Prefetch struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	walks  map[string]*walk
}

// walk is one prefetched walk: its commits once done is closed, and
// whether it ran to the end.
type walk struct {
	done     chan struct{}
	commits  []git.Commit
	complete bool
}

// NewPrefetch returns a Prefetch whose walks end with ctx or Close.
func NewPrefetch(ctx context.Context) *Prefetch {
	ctx, cancel := context.WithCancel(ctx)
	return &Prefetch{ctx: ctx, cancel: cancel, walks: map[string]*walk{}}
}

// Start walks, in the background, the new commits of each update in
// updates that moves a branch with open patches, on e.Git (the hook's
// environment: pre-receive's quarantine). It prefetches nothing for a push
// that updates anything other than branches, nor for a branch it creates
// (whose scan excludes what the other refs reached, read after the push).
func (p *Prefetch) Start(ctx context.Context, e *Env, updates []Update) {
	if p == nil || e.DB == nil {
		return
	}
	var moves []Update
	for _, u := range updates {
		if !strings.HasPrefix(u.Ref, HeadsPrefix) {
			return
		}
		if u.Old != git.ZeroOID && u.New != git.ZeroOID {
			moves = append(moves, u)
		}
	}
	if len(moves) == 0 {
		return
	}
	bases, err := patches.OpenBases(ctx, e.DB.R(), e.Repo)
	if err != nil {
		// Only a head start lost: post-receive reads them again.
		e.logger().Warn("merge scan prefetch", "PRINCIPAL", e.Principal, "REPO", e.Repo, "error", err.Error())
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range moves {
		if !bases[strings.TrimPrefix(u.Ref, HeadsPrefix)] {
			continue
		}
		revs := Segment{Old: u.Old, New: u.New}.revs()
		key := strings.Join(revs, " ")
		if _, ok := p.walks[key]; ok {
			continue
		}
		w := &walk{done: make(chan struct{})}
		p.walks[key] = w
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer close(w.done)
			w.commits, w.complete = prefetchWalk(p.ctx, e.Git, revs)
		}()
	}
}

// prefetchWalk walks revs on g, the hook's git: in the quarantine, and
// where that failed, outside it. git removes the quarantine once it moved
// its objects in, so a walk that starts after that cannot start there,
// and finds the objects where they went.
func prefetchWalk(ctx context.Context, g git.Repo, revs []string) (commits []git.Commit, complete bool) {
	for _, g := range []git.Repo{g, g.Unquarantined()} {
		commits = commits[:0]
		err := g.Walk(ctx, revs, func(c git.Commit) error {
			if len(commits) == prefetchCap {
				return errCapped
			}
			commits = append(commits, c)
			return nil
		})
		if err == nil || errors.Is(err, errCapped) || ctx.Err() != nil {
			return commits, err == nil
		}
	}
	return nil, false
}

// take returns the commits of the prefetched walk of revs, waiting for it,
// and forgets it; ok is false where there is none, or it failed or was
// cut short.
func (p *Prefetch) take(ctx context.Context, revs []string) (commits []git.Commit, ok bool) {
	if p == nil {
		return nil, false
	}
	key := strings.Join(revs, " ")
	p.mu.Lock()
	w := p.walks[key]
	delete(p.walks, key)
	p.mu.Unlock()
	if w == nil {
		return nil, false
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		return nil, false
	}
	return w.commits, w.complete
}

// Close stops the walks nobody took and waits for them to end.
func (p *Prefetch) Close() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
}
