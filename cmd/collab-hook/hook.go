package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookenv"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/push"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// hookCommand is what the repository hook shims exec. Each hook is a thin
// entry into internal/push; refusals are one "collab: …" line on stderr
// (shown to the pusher as remote:) and exit 1.
func hookCommand() *cli.Command {
	sub := func(name string) *cli.Command {
		return &cli.Command{
			Name:   name,
			Hidden: false,
			Action: func(c *cli.Context) error { return runHook(c.Context, globalsOf(c), name) },
		}
	}
	return &cli.Command{
		Name:  "hook",
		Usage: "run a repository hook (what the hook shims exec)",
		Subcommands: []*cli.Command{sub("pre-receive"), sub("proc-receive"), sub("post-receive"),
			{Name: "merge-scan", Hidden: true, Action: func(c *cli.Context) error { return runHook(c.Context, globalsOf(c), "merge-scan") }}},
	}
}

func runHook(ctx context.Context, g globals, name string) error {
	// One hook run, one wait for the writer lock however often it writes.
	ctx = store.WithWaitBudget(ctx)
	root, err := forge.New(g.root)
	if err != nil {
		return err
	}
	start := time.Now()
	log, closeLog := journal.Open(root.Dir)
	defer closeLog()
	h := hookenv.Decode(os.Getenv)
	var key string // REPO on every entry once the repository is known
	defer func() {
		// A hook that wrote says how long it queued for and held the
		// writer lock: the serial part of a push.
		if u := store.LockUseOf(ctx); u.Writes > 0 {
			attrs := append([]any{"PRINCIPAL", h.Principal, "REPO", key, "OUTCOME", "wrote", "DURATION_MS", time.Since(start).Milliseconds()}, u.Attrs()...)
			log.Info(name+" lock", attrs...)
		}
	}()
	fail := func(err error) error {
		l := log
		if key != "" {
			l = l.With("REPO", key)
		}
		l.Error(name, "PRINCIPAL", h.Principal, "OUTCOME", "error", "error", err.Error())
		fmt.Fprintf(os.Stderr, "collab: %s\n", text.Show(fault.Public(err)))
		return cli.Exit("", 1)
	}
	key, dir, err := push.RepoDir(root)
	if err != nil {
		return fail(err)
	}
	var us []push.Update
	if name != "proc-receive" {
		if us, err = pushcheck.ReadUpdates(os.Stdin); err != nil {
			return fail(err)
		}
		if name != "pre-receive" && !pushcheck.MovesBranches(us) {
			return nil // a refs/for push: nothing for the merge scan
		}
	}
	// Where serve has just checked write access and handed off the push
	// limits and branch rules (collab-hook-fast decides such a push
	// itself where it is installed), or the push is local (the
	// operator's: its refs and options are not limited), pre-receive asks
	// the database only for what the hand-off lacks.
	if h.Principal == access.Local && name == "pre-receive" {
		lim := pushlimit.Unlimited()
		h.Limits = &lim
	}
	checked := name == "pre-receive" && h.WriteChecked(key, time.Now())
	e := &push.Env{
		Root: root, Repo: key, Git: git.InHook(dir),
		Principal: h.Principal, WriteChecked: checked, URL: g.url,
		Stderr: os.Stderr, Log: log, Now: time.Now, Limits: h.Limits,
	}
	if name == "pre-receive" && h.Stamped(key, time.Now()) {
		e.Rules, e.Level = h.Rules, h.Checked.Level
	}
	if !checked || h.Limits == nil || (e.Rules == nil && pushcheck.TouchesBranches(us)) {
		if e.DB, err = store.OpenShort(ctx, root.DBPath()); err != nil {
			return fail(fault.Default(err, "forge database unavailable"))
		}
		defer e.DB.Close()
	}
	db := e.DB
	if name == "proc-receive" {
		// Each revision is a write of the pusher's, counted by the rule
		// every write of a principal passes (the operator's are not).
		e.CountWrite = (&ops.Service{DB: db, Root: root}).CountWrite
	}
	switch name {
	case "pre-receive":
		if err := push.PreReceive(ctx, e, us, pushcheck.EnvOptions()); err != nil {
			// PreReceive logged it with the refs.
			fmt.Fprintf(os.Stderr, "collab: %s\n", text.Show(fault.Public(err)))
			return cli.Exit("", 1)
		}
	case "proc-receive":
		if err := push.ProcReceive(ctx, e, os.Stdin, os.Stdout); err != nil {
			return fail(err)
		}
	case "post-receive":
		budget := push.ForegroundBudget
		if h.MergeScanBudget > 0 {
			budget = h.MergeScanBudget
		}
		deferred, err := push.PostReceive(ctx, e, us, budget)
		if len(deferred) > 0 {
			if berr := background(root, dir, g.url, deferred); berr != nil {
				log.Error("merge scan", "PRINCIPAL", e.Principal, "REPO", key, "OUTCOME", "error", "error", berr.Error())
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
		if _, err := push.PostReceive(ctx, e, us, 0); err != nil {
			log.Error("merge scan", "PRINCIPAL", e.Principal, "REPO", key, "OUTCOME", "error", "error", err.Error())
			return cli.Exit("", 1)
		}
	}
	return nil
}

// background starts "collab-hook hook merge-scan" for updates in its own
// session with no terminal and no inherited pipes, so that git (and the
// pusher) need not wait for it; the update lines go in through a pipe
// filled before the child starts.
func background(root forge.Root, dir, url string, updates []push.Update) error {
	bin, err := binary()
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, u := range updates {
		fmt.Fprintf(&b, "%s %s %s\n", u.Old, u.New, u.Ref)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	if _, err := w.WriteString(b.String()); err != nil {
		w.Close()
		return err
	}
	w.Close()
	args := []string{"--root", root.Dir}
	if url != "" {
		args = append(args, "--url", url)
	}
	cmd := exec.Command(bin, append(args, "hook", "merge-scan")...)
	cmd.Dir = dir
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
