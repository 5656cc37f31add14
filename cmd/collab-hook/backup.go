package main

import (
	"os"
	"os/exec"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/backup"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/store"
)

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:      "backup",
		Usage:     "an online, consistent copy of the whole forge (database, repositories, forge.key) into DIR",
		ArgsUsage: "DIR",
		Flags: []cli.Flag{
			// For tests and for operators who snapshot a filesystem: a
			// shell command run once the database and refs are copied and
			// the writer lock is released, before the objects are copied.
			&cli.StringFlag{Name: "after-snapshot", Hidden: true},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fault.New(fault.Usage, "usage: backup DIR (a new or empty directory)")
			}
			var after func() error
			if cmd := c.String("after-snapshot"); cmd != "" {
				after = func() error {
					sh := exec.CommandContext(c.Context, "sh", "-c", cmd)
					sh.Stdout, sh.Stderr = os.Stderr, os.Stderr
					return sh.Run()
				}
			}
			return withDB(c, func(root forge.Root, db *store.DB) error {
				_, err := backup.Backup(c.Context, root, db, c.Args().First(), time.Now(), c.App.Writer, after)
				return err
			})
		},
	}
}

func restoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "restore",
		Usage:     "make the root (--root, new or empty) from the backup in DIR; hook shims and paths are written for it",
		ArgsUsage: "DIR",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", EnvVars: []string{forge.EnvDB},
				Usage: "the empty PostgreSQL database (postgres://USER@HOST/DBNAME) a backup of a record on PostgreSQL goes into"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fault.New(fault.Usage, "usage: restore DIR (a backup made by collab-hook backup)")
			}
			root, err := rootOf(c)
			if err != nil {
				return err
			}
			bin, err := binary()
			if err != nil {
				return err
			}
			return backup.Restore(c.Context, c.Args().First(), root, c.String("db"), bin, c.App.Writer)
		},
	}
}
