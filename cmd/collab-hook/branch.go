package main

import (
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/verbs"
)

// branchCommand is the SSH verb branch (protect|unprotect|list) run on
// the server as the forge's operator, who is admin of every repository.
func branchCommand() *cli.Command {
	env := &verbs.Env{Principal: access.Local, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Now: time.Now}
	var db *store.DB
	cmd := verbs.BranchCommand(env)
	cmd.Usage += " (as the forge's operator)"
	cmd.Before = func(c *cli.Context) error {
		root, err := rootOf(c)
		if err != nil {
			return err
		}
		if db, err = root.Open(c.Context); err != nil {
			return err
		}
		env.Root, env.DB, env.URL = root, db, c.String("url")
		return nil
	}
	cmd.After = func(*cli.Context) error {
		if db != nil {
			return db.Close()
		}
		return nil
	}
	return cmd
}
