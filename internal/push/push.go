// Package push is what happens on a push: pre-receive checks access, push
// options and refs/for tips; proc-receive turns each refs/for/BASE command
// into a pinned, numbered patch revision; post-receive runs the merge scan
// that records patches reaching their target branch.
//
// Messages for the pusher go to Env.Stderr (git shows them as "remote:"
// lines); detail for the operator goes to Env.Log. Nothing is ever written
// to proc-receive's stdout but pkt-lines.
package push

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Env is what one hook run works with.
type Env struct {
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
	// CountWrite, when set, counts each refs/for revision against the
	// pusher's write budget, in the transaction that records it: the
	// hooks hand it ops.Service.CountWrite, the one rule for every write a
	// principal makes.
	CountWrite func(ctx context.Context, tx *sql.Tx, principal string) error
}

// limits are the push limits: the hand-off's, else the root's settings.
func (e *Env) limits(ctx context.Context) (pushlimit.Limits, error) {
	if e.Limits != nil {
		return *e.Limits, nil
	}
	l, err := pushlimit.Read(ctx, e.DB.R())
	if err != nil {
		return l, err
	}
	e.Limits = &l
	return l, nil
}

// RepoDir finds the repository a hook runs in (GIT_DIR, else the working
// directory, as git runs hooks of a bare repository there) and returns its
// key, with symlinks resolved on both sides before comparing.
func RepoDir(root forge.Root) (key, dir string, err error) {
	d := os.Getenv("GIT_DIR")
	if d == "" {
		d = "."
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", "", fmt.Errorf("find repository: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", "", fmt.Errorf("find repository: %w", err)
	}
	repos, err := filepath.EvalSymlinks(root.ReposDir())
	if err != nil {
		return "", "", fmt.Errorf("find repositories dir: %w", err)
	}
	if !reponame.Inside(repos, real) {
		return "", "", fault.New(fault.NotFound, "this repository is not under the forge root %s", root.Dir)
	}
	rel, err := filepath.Rel(repos, real)
	if err != nil {
		return "", "", fmt.Errorf("find repository: %w", err)
	}
	rel = filepath.ToSlash(rel)
	k, err := reponame.Key(rel)
	if err != nil || k != rel {
		return "", "", fault.New(fault.NotFound, "repository %s is not a forge repository", rel)
	}
	return k, real, nil
}

// Update is one ref update as git hands it to pre- and post-receive.
type Update struct {
	Old, New, Ref string
}

// ReadUpdates reads "OLD NEW REF" lines.
func ReadUpdates(r io.Reader) ([]Update, error) {
	var us []Update
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 || !git.IsOID(f[0]) || !git.IsOID(f[1]) {
			return nil, fmt.Errorf("bad ref update line %q", text.Clip(sc.Text()))
		}
		us = append(us, Update{Old: f[0], New: f[1], Ref: f[2]})
	}
	return us, sc.Err()
}

// baseURL returns the web UI's base URL without a trailing slash, or "".
func (e *Env) baseURL(ctx context.Context) string {
	u := e.URL
	if u == "" {
		u, _ = store.Setting(ctx, e.DB.R(), forge.SettingURL)
	}
	return strings.TrimRight(u, "/")
}

// patchURL is the web page of a patch, or "" without a base URL.
func (e *Env) patchURL(base, id string) string {
	if base == "" {
		return ""
	}
	return base + "/" + reponame.Display(e.Repo) + "/-/patches/" + id
}

// say writes one line for the pusher (git shows it as "remote: …"),
// shown as text.Show does, so that nothing quoted in it (a title, a
// refusal quoting a value) can act on the pusher's terminal; a pusher who
// went away (EPIPE) must not stop the hook, so errors are dropped.
func (e *Env) say(format string, args ...any) {
	_, _ = io.WriteString(e.Stderr, text.Show(fmt.Sprintf(format, args...))+"\n")
}

func (e *Env) logger() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

func ms(start time.Time) int64 { return time.Since(start).Milliseconds() }
