// Package hookrun runs one of collab's repository hooks: what
// "collab-hook hook NAME" does in the process git starts, and what serve
// does for a hook of the push it is serving when the hook relays itself to
// serve (internal/relay), which has the database open already.
package hookrun

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Names returns the hooks Run knows: git's three, and the detached merge
// scan post-receive starts for updates too big to scan while the pusher
// waits.
func Names() []string { return []string{"pre-receive", "proc-receive", "post-receive", "merge-scan"} }

// Hook is one run of a hook.
type Hook struct {
	Name string
	Root forge.Root
	// URL overrides the root's url setting ("" keeps it).
	URL string
	// Environ is the environment git gave the hook: serve's hand-off,
	// the push's quarantine and push options; nil: this process's. Dir
	// is where git ran it (GIT_DIR is relative to it).
	Environ []string
	Dir     string
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Log     *slog.Logger
	// DB is an open database (serve's); nil: Run opens one where the
	// hook needs it and closes it.
	DB *store.DB
	// Repo, when set, is the repository key the hook must be about:
	// serve relaying a hook of the push it serves.
	Repo string
	// Prefetch, when set, is the push's (serve's): a pre-receive that
	// passed starts the hooks' git reads in it, and proc-receive and
	// post-receive take them.
	Prefetch *ops.Prefetch
	// Skips, when set, is the push's (serve's): pre-receive adds to it
	// the moves it found unmerged.
	Skips *ops.Skips
	// Gate, when set, shuts the push's post-receive gate (serve's): a
	// pre-receive that passed shuts it where post-receive would find
	// nothing to do, adds the moves it found unmerged to Skips, and starts
	// Prefetch.
	Gate func() error
}

// Run runs h and returns its exit code. Refusals and failures are one
// "collab: …" line on h.Stderr (the pusher sees it as remote:), the
// detail goes to h.Log.
func Run(ctx context.Context, h Hook) int {
	// One hook run, one wait for the writer lock however often it writes.
	ctx = store.WithWaitBudget(ctx)
	start := time.Now()
	// A relayed hook's hand-off is its own environment as serve has it,
	// never this process's (serve's fds are not the hook's).
	var getenv func(string) string
	if h.Environ != nil {
		getenv = hookenv.Getenv(h.Environ)
	} else {
		getenv = hookenv.ProcessEnv()
	}
	hand := hookenv.Decode(getenv)
	var key string // REPO on every entry once the repository is known
	defer func() {
		// A hook that wrote says how long it queued for and held the
		// writer lock: the serial part of a push.
		if u := store.LockUseOf(ctx); u.Writes > 0 {
			attrs := append([]any{"PRINCIPAL", hand.Principal, "REPO", key, "OUTCOME", "wrote", "DURATION_MS", time.Since(start).Milliseconds()}, u.Attrs()...)
			h.Log.Info(h.Name+" lock", attrs...)
		}
	}()
	fail := func(err error) int {
		l := h.Log
		if key != "" {
			l = l.With("REPO", key)
		}
		l.Error(h.Name, "PRINCIPAL", hand.Principal, "OUTCOME", "error", "error", err.Error())
		if h.Name == "post-receive" {
			if msg, ok := movedAnyway(err); ok {
				fmt.Fprintln(h.Stderr, msg)
				return 0
			}
		}
		fmt.Fprintf(h.Stderr, "collab: %s\n", text.Show(fault.Public(err)))
		return 1
	}
	if !slices.Contains(Names(), h.Name) {
		return fail(fmt.Errorf("unknown hook %q", h.Name))
	}
	key, dir, err := pushcheck.RepoDirOf(h.Root.ReposDir(), h.Dir, getenv("GIT_DIR"))
	if err != nil {
		return fail(err)
	}
	if h.Repo != "" && key != h.Repo {
		return fail(fault.New(fault.Denied, "hook of %s relayed by the push to %s", key, h.Repo))
	}
	var us []ops.Update
	if h.Name != "proc-receive" {
		if us, err = pushcheck.ReadUpdates(h.Stdin); err != nil {
			return fail(err)
		}
		if (h.Name == "post-receive" || h.Name == "merge-scan") && !pushcheck.MovesBranches(us) {
			return 0 // a refs/for push: nothing for the merge scan
		}
	}
	e, closeDB, err := pushEnv(ctx, h, hand, getenv, key, dir, us)
	if err != nil {
		return fail(err)
	}
	defer closeDB()
	return dispatch(ctx, h, hand, e, dir, us, fail)
}

// pushEnv is what the push's use cases need for one hook run: the
// repository, who pushes, what serve checked and handed off, and the
// database where the hand-off lacks something (closeDB closes it).
func pushEnv(ctx context.Context, h Hook, hand hookenv.Handoff, getenv func(string) string, key, dir string, us []ops.Update) (e *ops.Push, closeDB func(), err error) {
	// Where serve has just checked write access and handed off the push
	// limits and branch rules, or the push is local (the
	// operator's: its refs and options are not limited), pre-receive asks
	// the database only for what the hand-off lacks.
	if hand.Principal == access.Local && h.Name == "pre-receive" {
		lim := pushlimit.Unlimited()
		hand.Limits = &lim
	}
	checked := h.Name == "pre-receive" && hand.WriteChecked(key, time.Now())
	g := git.InHook(dir)
	if h.Environ != nil {
		g = git.InHookEnv(dir, h.Environ)
	}
	e = &ops.Push{
		Root: h.Root, Repo: key, Git: g, DB: h.DB,
		Principal: hand.Principal, WriteChecked: checked, URL: h.URL,
		Stderr: h.Stderr, Log: h.Log, Now: time.Now, Limits: hand.Limits,
		Prefetched: h.Prefetch, Options: pushcheck.OptionsOf(getenv),
	}
	if h.Name == "pre-receive" && hand.Stamped(key, time.Now()) {
		e.Rules, e.Level = hand.Rules, hand.Checked.Level
	}
	closeDB = func() {}
	fenced := h.Name == "pre-receive" && pushcheck.CarriesLease(pushcheck.OptionsOf(getenv))
	if e.DB == nil && (fenced || !checked || hand.Limits == nil || (e.Rules == nil && pushcheck.TouchesBranches(us))) {
		if e.DB, err = h.Root.OpenShort(ctx); err != nil {
			return nil, nil, fault.Default(err, "forge database unavailable")
		}
		closeDB = func() { e.DB.Close() }
	}
	if e.DB != nil {
		e.Now = e.DB.Now // the record's clock: lease tokens agree across hosts
	}
	if h.Name == "pre-receive" && h.Gate != nil {
		e.Passed = func(us []ops.Update) []any {
			return passed(ctx, h, hand, getenv, e, us)
		}
	}
	if h.Name == "proc-receive" {
		// Each revision is a write of the pusher's, counted by the rule
		// every write of a principal passes (the operator's are not).
		e.CountWrite = (&ops.Service{DB: e.DB, Root: h.Root}).CountWrite
	}
	return e, closeDB, nil
}

// dispatch runs hook h's use case on e and returns its exit code.
func dispatch(ctx context.Context, h Hook, hand hookenv.Handoff, e *ops.Push, dir string, us []ops.Update, fail func(error) int) int {
	switch h.Name {
	case "pre-receive":
		if err := e.PreReceive(ctx, us, e.Options); err != nil {
			// PreReceive logged it with the refs.
			fmt.Fprintf(h.Stderr, "collab: %s\n", text.Show(fault.Public(err)))
			return 1
		}
	case "proc-receive":
		if err := procReceive(ctx, h.Stdin, h.Stdout, e.ProcReceive); err != nil {
			return fail(err)
		}
	case "post-receive":
		budget := ops.ForegroundBudget
		if hand.MergeScanBudget > 0 {
			budget = hand.MergeScanBudget
		}
		deferred, err := e.PostReceive(ctx, us, budget)
		if len(deferred) > 0 {
			if berr := background(h.Root, dir, h.URL, h.Environ, deferred); berr != nil {
				h.Log.Error("merge scan", "PRINCIPAL", e.Principal, "REPO", e.Repo, "OUTCOME", "error", "error", berr.Error())
				fmt.Fprintln(e.Stderr, "collab: could not start the background merge scan; run collab-hook fsck")
			}
		}
		if err != nil {
			return fail(err)
		}
	case "merge-scan":
		// A detached run for updates too big to scan while the pusher
		// waits: nobody reads its output; it logs.
		e.Stderr = io.Discard
		if _, err := e.PostReceive(ctx, us, 0); err != nil {
			h.Log.Error("merge scan", "PRINCIPAL", e.Principal, "REPO", e.Repo, "OUTCOME", "error", "error", err.Error())
			return 1
		}
	}
	return 0
}

// passed is what serve does once a pre-receive it runs has passed
// (hookenv.Handoff.Pass): say on the hook's entry that the gate is shut,
// hand the moves that merge nothing to Skips, start the reads the later
// hooks take.
func passed(ctx context.Context, h Hook, hand hookenv.Handoff, getenv func(string) string, e *ops.Push, us []ops.Update) (attrs []any) {
	p := hand.Pass(us, getenv, h.Gate)
	if p.ShutErr != nil {
		h.Log.Warn("post-receive gate", "PRINCIPAL", hand.Principal, "REPO", e.Repo, "error", p.ShutErr.Error())
	}
	if p.Skipped {
		attrs = append(attrs, "POST_RECEIVE", "skipped")
	}
	if len(p.Unmerged) > 0 && h.Skips != nil {
		h.Skips.Add(p.Unmerged)
	}
	if p.Prefetch && h.Prefetch != nil {
		h.Prefetch.Start(ctx, e, us)
	}
	return attrs
}

// background starts "collab-hook hook merge-scan" for updates in its own
// session with no terminal and no inherited pipes, so that git (and the
// pusher) need not wait for it; the update lines go in through a pipe.
// environ is the hook's (nil: this process's): the hand-off names the
// pusher to credit.
func background(root forge.Root, dir, url string, environ []string, updates []ops.Update) error {
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own path: %w", err)
	}
	args := []string{"--root", root.Dir}
	if url != "" {
		args = append(args, "--url", url)
	}
	return detach(bin, append(args, "hook", "merge-scan"), dir, environ, updates)
}

// detach starts bin with args in its own session and writes the update
// lines to its stdin. It writes after the start: lines past a pipe's
// buffer (64 KiB, some 650 updates) written before it would wait for a
// reader that did not exist yet, and hang the hook.
func detach(bin string, args []string, dir string, environ []string, updates []ops.Update) error {
	lines := pushcheck.FormatUpdates(updates)
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = environ
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	r.Close() // the child's now: a child that exits unread fails the write
	if err != nil {
		w.Close()
		return err
	}
	_, err = w.WriteString(lines)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if rerr := cmd.Process.Release(); err == nil {
		err = rerr
	}
	return err
}

// movedAnyway is what post-receive says where the push's refs have moved
// (post-receive runs after) but what they merged cannot be recorded now
// (a full disk, a busy or read-only database): "try again later" would
// send the pusher to push again, which does nothing; the forge's sweep
// records the moves once it can write. ok is false for any other error.
func movedAnyway(err error) (msg string, ok bool) {
	if fault.KindOf(err) != fault.Unavailable {
		return "", false
	}
	why := strings.TrimSuffix(fault.Public(err), "; try again later")
	return "collab: your push is in (its refs moved), but what it merged could not be recorded now (" + text.Show(why) +
		"); the forge's sweep records it once it can write: do not push again", true
}
