package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/fsck"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

func fsckCommand() *cli.Command {
	return &cli.Command{
		Name:      "fsck",
		Usage:     "repair disagreement between refs and the database, rewrite hook shims, re-run the merge scan",
		ArgsUsage: "[REPO]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "dry-run", Usage: "only report: change nothing"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return fault.New(fault.Usage, "usage: fsck [REPO] [--dry-run]")
			}
			key := ""
			if c.NArg() == 1 {
				k, err := reponame.Key(c.Args().First())
				if err != nil {
					return err
				}
				key = k
			}
			bin, err := binary()
			if err != nil {
				return err
			}
			return withDB(c, func(root forge.Root, db *store.DB) error {
				log, closeLog := journal.Open(root.Dir)
				defer closeLog()
				ck := &fsck.Checker{Root: root, DB: db, Binary: bin, Out: c.App.Writer, Log: log, Now: time.Now, URL: c.String("url"),
					DryRun: c.Bool("dry-run")}
				if err := ck.Run(c.Context, key); err != nil {
					return err
				}
				if ck.DryRun {
					fmt.Fprintf(c.App.Writer, "fsck: %d problems found, 0 repaired (dry run)\n", ck.Found)
					if ck.Found > 0 {
						return fault.New(fault.Internal, "%d problems found; run fsck without --dry-run to repair them", ck.Found)
					}
					return nil
				}
				fmt.Fprintf(c.App.Writer, "fsck: %d problems found, %d repaired\n", ck.Found, ck.Repaired)
				if ck.Found > ck.Repaired {
					return fault.New(fault.Internal, "%d problems could not be repaired", ck.Found-ck.Repaired)
				}
				return nil
			})
		},
	}
}
