package browse

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/cache"
	"github.com/collab-forge/collab/internal/git"
)

// MemoOffVar, set to "off" in collab-web's environment, turns off the
// Memo: every view of a code page then runs git for every read, as cgit
// does without its cache. On this 2-core machine a git process costs
// about 9 ms to start, and the overview runs five or six of them.
// bench/cgit.sh measures both in one run against cgit (wall, median of 31
// interleaved rounds; two runs; collab ÷ cgit):
//
//	page       memo on      memo off
//	overview   0.25-0.26x   3.01-3.02x
//	tree       0.14-0.15x   1.27-1.28x
//	log        0.19-0.24x   1.38-1.42x
//	commit     0.19-0.20x   2.62-2.65x
//	blob       0.01x        0.07x
const MemoOffVar = "COLLAB_CODE_CACHE"

// Memo remembers what the code pages read from git and cannot change: the
// reads named by full object ids (a commit's log, a tree, a path in a
// commit, a blob, a commit's message), which are the same for ever, and
// the reads named by branch or tag (the branches listed, a name resolved)
// under the git.RefsStamp of the repository's refs, which changes with any
// of them. A page viewed again then starts no git at all. It is bounded
// by the bytes it holds, least recently used out first; safe for
// concurrent use.
type Memo struct {
	c *cache.Cache[any]
	// now is the clock RefsStamp compares the refs' times with.
	now func() time.Time
}

// NewMemo returns a memo of at most max bytes; now nil means time.Now.
func NewMemo(max int64, now func() time.Time) *Memo {
	if now == nil {
		now = time.Now
	}
	return &Memo{c: cache.New[any](max), now: now}
}

// WithMemo returns r reading through m (nil: reading git every time).
func (r Repo) WithMemo(m *Memo) Repo {
	r.memo = m
	return r
}

// memoEntry is a remembered read: its value, or the error that kept it
// from being remembered (seen only by callers that waited for it).
type memoEntry[T any] struct {
	v   T
	err error
}

// remember returns the read under key (made from object ids or a refs
// stamp), making it with read when the memo lacks it; size tells a value's
// bytes for the memo's bound. Errors are never remembered.
func remember[T any](r Repo, key string, size func(T) int64, read func() (T, error)) (T, error) {
	if r.memo == nil {
		return read()
	}
	got := r.memo.c.Do(r.git.Dir+"\x00"+key, func() (any, int64, bool) {
		v, err := read()
		if err != nil {
			return memoEntry[T]{err: err}, 0, false
		}
		return memoEntry[T]{v: v}, size(v) + int64(len(key)) + 64, true
	})
	e := got.(memoEntry[T])
	return e.v, e.err
}

// refsKey is a key for a read named by branches or tags: the repository's
// refs stamp, hashed (a stamp lists every directory under refs/), or ok
// false when the stamp cannot tell (refs changed within the last second).
func (r Repo) refsKey() (string, bool) {
	if r.memo == nil {
		return "", false
	}
	stamp, ok := git.RefsStamp(r.git.Dir, r.memo.now())
	if !ok {
		return "", false
	}
	sum := sha256.Sum256([]byte(stamp))
	return hex.EncodeToString(sum[:16]), true
}

func keyOf(parts ...any) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(0)
		}
		switch v := p.(type) {
		case string:
			b.WriteString(v)
		case int:
			b.WriteString(strconv.Itoa(v))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		}
	}
	return b.String()
}

func commitsSize(cs []Commit) int64 {
	var n int64
	for _, c := range cs {
		n += commitSize(c)
	}
	return n
}

func commitSize(c Commit) int64 {
	return int64(len(c.OID)+len(c.Author)+len(c.AuthorEmail)+len(c.When)+len(c.Subject)+len(c.Body)+41*len(c.Parents)) + 128
}
