package ops

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/pushcheck"
)

// prefetchCap bounds the commits one prefetched walk keeps: a push of more
// new commits than that is rare, and its scan walks again as without.
const prefetchCap = 1000

// errCapped stops a prefetched walk at prefetchCap.
var errCapped = errors.New("prefetch: more commits than it keeps")

// Prefetch runs the git reads of one push's later hooks ahead of them:
// proc-receive's read of each refs/for tip (git.Repo.PushedRange) and the
// merge scan's walk of each branch move. Once pre-receive has passed,
// serve, which ran it, starts the reads on the quarantined objects: git then moves those
// objects in, updates the refs and starts the hook while the reads run,
// where the hook would otherwise start its read only then, with the pusher
// waiting.
//
// A read gives the same wherever it runs: it names objects, which do not
// change, and refs the push does not move before the hook (Start
// prefetches only pushes of branches and refs/for alone, so no replace ref
// moves, and git runs proc-receive before it updates any branch). Like any
// read of a branch, proc-receive's may see it as a concurrent push left it
// a moment earlier. A read runs beside the quarantine, which git removes
// once it moved the objects in, and once more outside it where that
// failed; one that still failed, or was cut short, is not used, and the
// hook reads as without.
//
// The zero value is not usable: NewPrefetch. A nil *Prefetch prefetches
// nothing.
type Prefetch struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	jobs   map[string]*job
}

// job is one prefetched read: its value once done is closed, and whether
// it may be used.
type job struct {
	done chan struct{}
	val  any
	ok   bool
}

// pushedRange is a prefetched git.Repo.PushedRange.
type pushedRange struct {
	pushed git.Pushed
	found  bool
}

// NewPrefetch returns a Prefetch whose reads end with ctx or Close.
func NewPrefetch(ctx context.Context) *Prefetch {
	ctx, cancel := context.WithCancel(ctx)
	return &Prefetch{ctx: ctx, cancel: cancel, jobs: map[string]*job{}}
}

func walkKey(revs []string) string       { return "walk " + strings.Join(revs, " ") }
func rangeKey(tip, branch string) string { return "range " + tip + " " + branch }

// Start reads, in the background and on e.Git (the hook's environment:
// pre-receive's quarantine), what proc-receive will read of each refs/for
// update, and the new commits of each update that moves a branch with open
// patches. It prefetches nothing for a push that updates anything else,
// nor the walk of a branch it creates (which excludes what the other refs
// reached, read after the push).
func (p *Prefetch) Start(ctx context.Context, e *Push, updates []Update) {
	if p == nil {
		return
	}
	var moves, fors []Update
	for _, u := range updates {
		switch {
		case strings.HasPrefix(u.Ref, HeadsPrefix):
			if u.Old != git.ZeroOID && u.New != git.ZeroOID {
				moves = append(moves, u)
			}
		case strings.HasPrefix(u.Ref, pushcheck.ForPrefix):
			fors = append(fors, u)
		default:
			return
		}
	}
	for _, u := range fors {
		branch, err := pushcheck.BaseOf(u.Ref)
		if err != nil || !git.IsOID(u.New) || u.New == git.ZeroOID {
			continue // proc-receive refuses it
		}
		p.start(rangeKey(u.New, branch), func(ctx context.Context) (any, bool) {
			var r pushedRange
			err := besideQuarantine(ctx, e.Git, func(g git.Repo) (err error) {
				r.pushed, r.found, err = g.PushedRange(ctx, u.New, HeadsPrefix+branch, pushedLimit)
				return err
			})
			return r, err == nil
		})
	}
	if len(moves) == 0 || e.DB == nil {
		return
	}
	bases, err := patches.OpenBases(ctx, e.DB.R(), e.Repo)
	if err != nil {
		// Only a head start lost: post-receive reads them again.
		e.logger().Warn("merge scan prefetch", "PRINCIPAL", e.Principal, "REPO", e.Repo, "error", err.Error())
		return
	}
	for _, u := range moves {
		if !bases[strings.TrimPrefix(u.Ref, HeadsPrefix)] {
			continue
		}
		revs := Segment{Old: u.Old, New: u.New}.revs()
		p.start(walkKey(revs), func(ctx context.Context) (any, bool) {
			var commits []git.Commit
			err := besideQuarantine(ctx, e.Git, func(g git.Repo) error {
				commits = commits[:0]
				return g.Walk(ctx, revs, func(c git.Commit) error {
					if len(commits) == prefetchCap {
						return errCapped
					}
					commits = append(commits, c)
					return nil
				})
			})
			return commits, err == nil
		})
	}
}

// start runs read in the background as the job key, unless there is one.
func (p *Prefetch) start(key string, read func(context.Context) (any, bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.jobs[key]; ok {
		return
	}
	j := &job{done: make(chan struct{})}
	p.jobs[key] = j
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(j.done)
		j.val, j.ok = read(p.ctx)
	}()
}

// besideQuarantine runs read on g, the hook's git, beside the quarantine
// (git.Repo.BesideQuarantine: git may remove it at any moment) and, where
// that failed (an object moved in between two of git's lookups), once
// more outside it, where by then the objects are, if the push is going
// on. A read cut short is not retried.
func besideQuarantine(ctx context.Context, g git.Repo, read func(git.Repo) error) error {
	err := read(g.BesideQuarantine())
	if err == nil || errors.Is(err, errCapped) || ctx.Err() != nil {
		return err
	}
	return read(g.Unquarantined())
}

// take returns the value of the job key, waiting for it, and forgets it;
// ok is false where there is none, or it failed or was cut short.
func (p *Prefetch) take(ctx context.Context, key string) (val any, ok bool) {
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	j := p.jobs[key]
	delete(p.jobs, key)
	p.mu.Unlock()
	if j == nil {
		return nil, false
	}
	select {
	case <-j.done:
	case <-ctx.Done():
		return nil, false
	}
	return j.val, j.ok
}

// Close stops the reads nobody took and waits for them to end.
func (p *Prefetch) Close() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
}

// walk is e.Git.Walk, from the walk serve prefetched where there is one.
func (e *Push) walk(ctx context.Context, revs []string, fn func(git.Commit) error) error {
	val, ok := e.Prefetched.take(ctx, walkKey(revs))
	if !ok {
		return e.Git.Walk(ctx, revs, fn)
	}
	e.prefetched++
	for _, c := range val.([]git.Commit) {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// pushedRange is e.Git.PushedRange of tip and branch, as serve prefetched
// it where it did.
func (e *Push) pushedRange(ctx context.Context, tip, branch string) (git.Pushed, bool, error) {
	if val, ok := e.Prefetched.take(ctx, rangeKey(tip, branch)); ok {
		e.prefetched++
		r := val.(pushedRange)
		return r.pushed, r.found, nil
	}
	return e.Git.PushedRange(ctx, tip, HeadsPrefix+branch, pushedLimit)
}
