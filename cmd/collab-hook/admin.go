package main

import (
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create the root, the database and forge.key (safe to run again)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "url", Usage: "the web UI's base URL"},
			&cli.StringFlag{Name: "ssh", Usage: "how users reach the forge, e.g. ssh://git@forge.example:2222"},
			// COLLAB_DB too: a root made with it and no db setting would
			// leave every other process (sshd's forced command has no
			// COLLAB_DB) looking for a SQLite file.
			&cli.StringFlag{Name: "db", EnvVars: []string{forge.EnvDB}, Usage: "keep the record on PostgreSQL: postgres://USER@HOST/DBNAME (the db setting)"},
		},
		Action: func(c *cli.Context) error {
			root, err := rootOf(c)
			if err != nil {
				return err
			}
			err = forge.Init(c.Context, root, map[string]string{forge.SettingURL: c.String("url"), forge.SettingSSH: c.String("ssh"), forge.SettingDB: c.String("db")})
			if err != nil {
				return fault.Default(err, "init failed")
			}
			// An upgraded or restored root gets its key index here
			// (install.sh runs init on every upgrade).
			if err := withDB(c, func(_ forge.Root, db *store.DB) error { return principals.WriteKeyIndex(c.Context, db) }); err != nil {
				return fault.Wrap(err, "init failed")
			}
			fmt.Fprintf(c.App.Writer, "forge root %s ready\n", root.Dir)
			return nil
		},
	}
}

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate-to-postgres",
		Usage:     "move the root's SQLite record into an empty PostgreSQL database (stop collab-web and logins first)",
		ArgsUsage: "URL",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fault.New(fault.Usage, "usage: migrate-to-postgres postgres://USER@HOST/DBNAME")
			}
			root, err := rootOf(c)
			if err != nil {
				return err
			}
			counts, err := forge.MigrateToPostgres(c.Context, root, c.Args().First())
			if err != nil {
				return fault.Default(err, "migrate-to-postgres failed")
			}
			// This is collab-hook-pg (the URL argument handed the run
			// over), which serves the root from now on: the repositories'
			// hooks name it, so that serve runs them from the root's hooks
			// directory (repos.HookSet), as fsck would write them.
			bin, err := binary()
			if err != nil {
				return err
			}
			if err := withDB(c, func(root forge.Root, db *store.DB) error {
				_, err := repos.ConfigureAll(c.Context, root, db.R(), bin)
				return err
			}); err != nil {
				return fault.Default(err, "migrate-to-postgres moved the record, but rewriting the hooks failed: run collab-hook fsck")
			}
			tables := slices.Sorted(maps.Keys(counts))
			rows := 0
			for _, t := range tables {
				rows += counts[t]
			}
			for _, t := range tables {
				fmt.Fprintf(c.App.Writer, "%-18s %d rows\n", t, counts[t])
			}
			fmt.Fprintf(c.App.Writer, "moved %d rows of %d tables to %s, the same count in each; the SQLite record is kept as %s\n",
				rows, len(tables), store.Redact(c.Args().First()), root.DBPath()+".before-postgres")
			return nil
		},
	}
}

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "the root's settings (" + strings.Join(forge.Settings, ", ") + ")",
		Subcommands: []*cli.Command{
			{
				Name:      "get",
				ArgsUsage: "KEY",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 || !forge.ValidSetting(c.Args().First()) {
						return fault.New(fault.Usage, "usage: config get KEY (one of %s)", strings.Join(forge.Settings, ", "))
					}
					return withDB(c, func(root forge.Root, db *store.DB) error {
						v, err := store.Setting(c.Context, db.R(), c.Args().First())
						if err != nil {
							return err
						}
						if v == "" {
							v = forge.Defaults[c.Args().First()]
						}
						fmt.Fprintln(c.App.Writer, v)
						return nil
					})
				},
			},
			{
				Name:      "set",
				ArgsUsage: "KEY VALUE",
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 || !forge.ValidSetting(c.Args().First()) {
						return fault.New(fault.Usage, "usage: config set KEY VALUE (KEY one of %s)", strings.Join(forge.Settings, ", "))
					}
					if err := forge.CheckSetting(c.Args().Get(0), c.Args().Get(1)); err != nil {
						return err
					}
					return withDB(c, func(root forge.Root, db *store.DB) error {
						if c.Args().Get(0) == forge.SettingAuthorizedKeys {
							// The file follows the setting at once.
							return principals.SetAuthorizedKeys(c.Context, db, c.Args().Get(1))
						}
						return db.Write(c.Context, func(tx *sql.Tx) error {
							return store.SetSetting(c.Context, tx, c.Args().Get(0), c.Args().Get(1))
						})
					})
				},
			},
		},
	}
}

func repoCommand() *cli.Command {
	return &cli.Command{
		Name:  "repo",
		Usage: "create and list repositories",
		Subcommands: []*cli.Command{
			{
				Name:      "create",
				ArgsUsage: "NAME",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "public", Usage: "readable by everyone, anonymously too"},
					&cli.StringFlag{Name: "description"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fault.New(fault.Usage, "usage: repo create NAME [--public] [--description D]")
					}
					bin, err := binary()
					if err != nil {
						return err
					}
					return withDB(c, func(root forge.Root, db *store.DB) error {
						r, err := repos.Create(c.Context, root, db, c.Args().First(), c.Bool("public"), c.String("description"), bin, time.Now())
						if err != nil {
							return err
						}
						fmt.Fprintf(c.App.Writer, "created %s\n", reponame.Display(r.Name))
						return nil
					})
				},
			},
			{
				Name: "list",
				Action: func(c *cli.Context) error {
					return withDB(c, func(root forge.Root, db *store.DB) error {
						rs, err := repos.List(c.Context, db.R())
						if err != nil {
							return err
						}
						for _, r := range rs {
							vis := "private"
							if r.Public {
								vis = "public"
							}
							fmt.Fprintf(c.App.Writer, "%s\t%s\t%s\n", reponame.Display(r.Name), vis, text.Show(r.Description))
						}
						return nil
					})
				},
			},
		},
	}
}

// withDB opens the root's database for one admin command.
func withDB(c *cli.Context, fn func(forge.Root, *store.DB) error) error {
	root, err := rootOf(c)
	if err != nil {
		return err
	}
	db, err := root.Open(c.Context)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(root, db)
}
