package diff

import (
	"context"
	"fmt"

	"github.com/collab-forge/collab/internal/cache"
)

// Memo remembers diffs by their repository, commits and limits: all of
// them immutable, so a remembered diff is never stale, only evicted (least
// recently used first, within the memo's bytes). A commit or patch page
// viewed again then starts no git. Safe for concurrent use; a nil Memo
// remembers nothing. Its switch and figure are browse.Memo's, whose reads
// it completes for the commit page.
type Memo struct {
	c *cache.Cache[memoEntry]
}

type memoEntry struct {
	res Result
	err error
}

// NewMemo returns a memo of at most max bytes.
func NewMemo(max int64) *Memo { return &Memo{c: cache.New[memoEntry](max)} }

// Revision is the package's Revision, remembered.
func (m *Memo) Revision(ctx context.Context, repoDir string, r Range, lim Limits) (Result, error) {
	return m.do(fmt.Sprint("rev\x00", repoDir, "\x00", r, lim), func() (Result, error) {
		return Revision(ctx, repoDir, r, lim)
	})
}

// Interdiff is the package's Interdiff, remembered.
func (m *Memo) Interdiff(ctx context.Context, repoDir string, from, to Range, lim Limits) (Result, error) {
	return m.do(fmt.Sprint("inter\x00", repoDir, "\x00", from, to, lim), func() (Result, error) {
		return Interdiff(ctx, repoDir, from, to, lim)
	})
}

func (m *Memo) do(key string, mk func() (Result, error)) (Result, error) {
	if m == nil {
		return mk()
	}
	e := m.c.Do(key, func() (memoEntry, int64, bool) {
		res, err := mk()
		if err != nil {
			return memoEntry{err: err}, 0, false
		}
		size := int64(len(key)+len(res.Text)) + 256
		for _, n := range res.Notes {
			size += int64(len(n))
		}
		for _, s := range res.Skipped {
			size += int64(len(s.Path)+len(s.Reason)) + 32
		}
		return memoEntry{res: res}, size, true
	})
	res := e.res
	// Whoever appends to a remembered diff's lists appends to a copy.
	res.Notes = res.Notes[:len(res.Notes):len(res.Notes)]
	res.Skipped = res.Skipped[:len(res.Skipped):len(res.Skipped)]
	return res, e.err
}
