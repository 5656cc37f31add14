package main

import (
	"context"
	"os"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/serve"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "the forced command of every key: run SSH_ORIGINAL_COMMAND for a principal",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "as", Usage: "the principal the key belongs to"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 || c.String("as") == "" {
				return fault.New(fault.Usage, "usage: serve --as NAME (the command comes from SSH_ORIGINAL_COMMAND)")
			}
			return runServe(c.Context, globalsOf(c), c.String("as"))
		},
	}
}

func runServe(ctx context.Context, g globals, as string) error {
	root, err := forge.New(g.root)
	if err != nil {
		return err
	}
	log, closeLog := journal.Open(root.Dir)
	defer closeLog()
	code := serve.Run(ctx, &serve.Request{
		Root:      root,
		Principal: as,
		Command:   os.Getenv("SSH_ORIGINAL_COMMAND"),
		UserAuth:  os.Getenv("SSH_USER_AUTH"),
		Environ:   os.Environ(),
		URL:       g.url,
		Stdin:     os.Stdin,
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		Log:       log,
		Now:       time.Now,
		Exec: func(path string, argv, env []string) error {
			_ = closeLog()
			return syscall.Exec(path, argv, env)
		},
	})
	if code == 0 {
		return nil
	}
	return cli.Exit("", code)
}
