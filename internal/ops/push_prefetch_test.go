package ops

import (
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/git"
)

// Which pushes Start prefetches, and that a prefetched walk that failed
// leaves post-receive to walk itself: the merge is recorded either way.
func TestPrefetch(t *testing.T) {
	for _, tc := range []struct {
		name string
		// also are updates pushed beside main's; patch: main has an open
		// patch; broken: the prefetch's git cannot walk.
		also          []Update
		patch, broken bool
		started       int
	}{
		{name: "a branch with an open patch", patch: true, started: 1},
		{name: "no open patch on the branch", started: 0},
		{name: "a tag in the same push", patch: true, also: []Update{{Old: git.ZeroOID, New: "", Ref: "refs/tags/v1"}}, started: 0},
		{name: "a new branch in the same push", patch: true, also: []Update{{Old: git.ZeroOID, New: "", Ref: "refs/heads/new"}}, started: 1},
		{name: "a walk that fails", patch: true, broken: true, started: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newForge(t)
			rev := ""
			if tc.patch {
				rev = f.mergedTopic()
			} else {
				f.commit("No patch")
			}
			u := f.moveMain("bob")
			us := []Update{u}
			for _, a := range tc.also {
				a.New = u.New
				us = append(us, a)
			}
			p := NewPrefetch(f.ctx)
			defer p.Close()
			e := *f.env
			if tc.broken {
				e.Git = git.Open(t.TempDir()) // no repository there
			}
			p.Start(f.ctx, &e, us)
			if len(p.jobs) != tc.started {
				t.Fatalf("%d walks started, want %d", len(p.jobs), tc.started)
			}
			f.env.Prefetched = p
			if _, err := f.env.PostReceive(f.ctx, []Update{u}, ForegroundBudget); err != nil {
				t.Fatal(err)
			}
			taken := 0
			if tc.started > 0 && !tc.broken {
				taken = 1
			}
			if f.env.prefetched != taken {
				t.Errorf("%d prefetched walks taken, want %d", f.env.prefetched, taken)
			}
			if tc.patch {
				if v := f.query("SELECT state || '|' || merged_commit FROM patches WHERE id = ?", pid); v != "merged|"+rev {
					t.Errorf("patch %q, want merged|%s", v, rev)
				}
			}
			if len(p.jobs) != 0 {
				t.Errorf("walks left after post-receive: %v", p.jobs)
			}
		})
	}
}

// proc-receive takes the read serve prefetched for its refs/for tip, and
// answers as it would have without.
func TestPrefetchProcReceive(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"refs/for/main", "ok refs/for/main"},
		{"refs/for/main%topic=t1", "ok refs/for/main%topic=t1"},
		{"refs/for/nope", "ng refs/for/nope unknown base branch nope"},
	} {
		t.Run(tc.ref, func(t *testing.T) {
			f := newForge(t)
			rev := f.commit("Topic\n\nPatch: " + pid)
			p := NewPrefetch(f.ctx)
			defer p.Close()
			p.Start(f.ctx, f.env, []Update{{Old: git.ZeroOID, New: rev, Ref: tc.ref}})
			f.env.Prefetched = p
			got := f.procReceive(tc.ref, rev)
			if len(got) == 0 || !strings.HasPrefix(got[0], tc.want) {
				t.Errorf("report %q, want %q first", got, tc.want)
			}
			if f.env.prefetched != 1 {
				t.Errorf("%d prefetched reads taken, want 1", f.env.prefetched)
			}
		})
	}
}
