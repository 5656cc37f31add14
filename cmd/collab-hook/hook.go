package main

import (
	"fmt"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/push"
)

// hookCommand is what the repository hook shims exec. Each hook is a thin
// entry into internal/push; refusals are one "collab: …" line on stderr
// (shown to the pusher as remote:) and exit 1.
func hookCommand() *cli.Command {
	sub := func(name string) *cli.Command {
		return &cli.Command{
			Name:   name,
			Hidden: false,
			Action: func(c *cli.Context) error { return runHook(c, name) },
		}
	}
	return &cli.Command{
		Name:        "hook",
		Usage:       "run a repository hook (what the hook shims exec)",
		Subcommands: []*cli.Command{sub("pre-receive"), sub("proc-receive"), sub("post-receive")},
	}
}

func runHook(c *cli.Context, name string) error {
	ctx := c.Context
	root, err := rootOf(c)
	if err != nil {
		return err
	}
	log, closeLog := journal.Open(root.Dir)
	defer closeLog()
	fail := func(err error) error {
		log.Error(name, "PRINCIPAL", push.Principal(), "OUTCOME", "error", "error", err.Error())
		fmt.Fprintf(os.Stderr, "collab: %s\n", fault.Public(err))
		return cli.Exit("", 1)
	}
	key, dir, err := push.RepoDir(root)
	if err != nil {
		return fail(err)
	}
	var us []push.Update
	if name != "proc-receive" {
		if us, err = push.ReadUpdates(os.Stdin); err != nil {
			return fail(err)
		}
		if name == "post-receive" && !push.MovesBranches(us) {
			return nil // a refs/for push: nothing for the merge scan
		}
	}
	db, err := root.Open(ctx)
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	e := &push.Env{
		Root: root, DB: db, Repo: key, Git: git.Repo{Dir: dir},
		Principal: push.Principal(), URL: c.String("url"),
		Stderr: os.Stderr, Log: log, Now: time.Now,
	}
	switch name {
	case "pre-receive":
		if err := push.PreReceive(ctx, e, us, push.EnvOptions()); err != nil {
			// PreReceive logged it with the refs.
			fmt.Fprintf(os.Stderr, "collab: %s\n", fault.Public(err))
			return cli.Exit("", 1)
		}
	case "proc-receive":
		if err := push.ProcReceive(ctx, e, os.Stdin, os.Stdout); err != nil {
			return fail(err)
		}
	case "post-receive":
		if err := push.PostReceive(ctx, e, us); err != nil {
			return fail(err)
		}
	}
	return nil
}
