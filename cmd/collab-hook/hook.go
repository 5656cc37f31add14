package main

import (
	"context"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/hookrun"
	"github.com/collab-forge/collab/internal/journal"
)

// hookCommand is what the repository hook shims exec. Each hook is a thin
// entry into internal/hookrun; refusals are one "collab: …" line on stderr
// (shown to the pusher as remote:) and exit 1.
func hookCommand() *cli.Command {
	var subs []*cli.Command
	for _, name := range hookrun.Names() {
		subs = append(subs, &cli.Command{
			Name:   name,
			Hidden: name == "merge-scan",
			Action: func(c *cli.Context) error { return runHook(c.Context, globalsOf(c), name) },
		})
	}
	return &cli.Command{
		Name:        "hook",
		Usage:       "run a repository hook (what the hook shims exec)",
		Subcommands: subs,
	}
}

func runHook(ctx context.Context, g globals, name string) error {
	root, err := forge.New(g.root)
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	log, closeLog := journal.Open(root.Dir)
	defer closeLog()
	code := hookrun.Run(ctx, hookrun.Hook{
		Name: name, Root: root, URL: g.url, Dir: wd,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Log: log,
	})
	if code != 0 {
		return cli.Exit("", code)
	}
	return nil
}
