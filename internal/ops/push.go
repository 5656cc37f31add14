package ops

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Push is one hook run of a push: the use cases of pre-receive,
// proc-receive and post-receive, with what serve handed off.
type Push struct {
	Root      forge.Root
	DB        *store.DB
	Repo      string // the repository key, org/foo.git
	Git       git.Repo
	Principal string
	// WriteChecked says serve's hand-off covers write access
	// (hookenv.Handoff.WriteChecked): pre-receive then asks the database
	// nothing, and DB may be nil.
	WriteChecked bool
	// URL overrides the root's url setting when not empty (--url, COLLAB_URL).
	URL    string
	Stderr io.Writer
	Log    *slog.Logger
	Now    func() time.Time
	// Limits are the push limits serve handed off; nil: read from DB.
	Limits *pushlimit.Limits
	// Rules are the branch rules serve handed off with WriteChecked; nil:
	// read from DB. Level is the pusher's access serve checked (None:
	// ask DB).
	Rules map[string]pushcheck.Rule
	Level access.Level
	// CountWrite, when set, counts each refs/for revision against the
	// pusher's write budget, in the transaction that records it: the
	// hooks hand it ops.Service.CountWrite, the one rule for every write a
	// principal makes.
	CountWrite func(ctx context.Context, tx store.Tx, principal string) error
	// Prefetched holds the reads serve started when pre-receive passed
	// (nil: none; the hooks read themselves).
	Prefetched *Prefetch
	// Passed, when set, is told of a pre-receive that passed before its
	// entry is logged, and what it returns goes on the entry: serve,
	// running pre-receive, shuts the post-receive gate there.
	Passed func(updates []Update) (attrs []any)
	// Options are the push's raw push options (post-receive reads its
	// lease= tokens from them into Tokens).
	Options []string
	// Tokens are the lease tokens the pusher's (or submitter's) move
	// carried, by full issue id: the merge it records closes an issue
	// only while its token is the live tenure's (issues.CloseFenced).
	Tokens map[string]int64
	// prefetched counts the reads this run took from Prefetched.
	prefetched int
}

// limits are the push limits: the hand-off's, else the root's settings.
func (e *Push) limits(ctx context.Context) (pushlimit.Limits, error) {
	if e.Limits != nil {
		return *e.Limits, nil
	}
	settings, err := e.DB.Settings(ctx)
	if err != nil {
		return pushlimit.Defaults(), fmt.Errorf("read push limits: %w", err)
	}
	l := pushlimit.Of(settings)
	e.Limits = &l
	return l, nil
}

// Update is one ref update as git hands it to pre- and post-receive.
type Update = pushcheck.Update

// Options are the push options of one push; Lease is a -o lease= option.
type (
	Options = pushcheck.Options
	Lease   = pushcheck.Lease
)

// Namespaces of refs the hooks treat specially.
const (
	ForPrefix   = pushcheck.ForPrefix
	HeadsPrefix = pushcheck.HeadsPrefix
)

// baseURL returns the web UI's base URL without a trailing slash, or "".
func (e *Push) baseURL(ctx context.Context) string {
	u := e.URL
	if u == "" {
		settings, _ := e.DB.Settings(ctx)
		u = settings[forge.SettingURL]
	}
	return strings.TrimRight(u, "/")
}

// patchURL is the web page of a patch, or "" without a base URL.
func (e *Push) patchURL(base, id string) string {
	if base == "" {
		return ""
	}
	return base + "/" + reponame.Display(e.Repo) + "/-/patches/" + id
}

// say writes one line for the pusher (git shows it as "remote: …"),
// shown as text.Show does, so that nothing quoted in it (a title, a
// refusal quoting a value) can act on the pusher's terminal; a pusher who
// went away (EPIPE) must not stop the hook, so errors are dropped.
func (e *Push) say(format string, args ...any) {
	_, _ = io.WriteString(e.Stderr, text.Show(fmt.Sprintf(format, args...))+"\n")
}

func (e *Push) logger() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

func ms(start time.Time) int64 { return time.Since(start).Milliseconds() }
