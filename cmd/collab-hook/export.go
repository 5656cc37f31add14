package main

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/export"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/journal"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write the record (issues, comments, tenures, patches, reviews) into refs/collab/, signed with the forge key",
		ArgsUsage: "REPO | --all",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "all", Usage: "every repository"},
			&cli.BoolFlag{Name: "json", Usage: "print one JSON array of results"},
		},
		Action: func(c *cli.Context) error {
			return forEachRepo(c, "export", func(e exportEnv, repo, dir string) (any, error) {
				x := &export.Exporter{DB: e.db, Key: e.key, Log: e.log}
				res, err := x.Export(c.Context, repo, dir, time.Now())
				if err != nil {
					return nil, err
				}
				if !c.Bool("json") {
					state := "up to date"
					if n := len(res.Updated); n > 0 {
						state = fmt.Sprintf("%d new commit(s), %d object(s)", n, res.Objects)
					}
					fmt.Fprintf(c.App.Writer, "%s: %d record(s), %s\n", reponame.Display(repo), res.Records, state)
				}
				return res, nil
			})
		},
		Subcommands: []*cli.Command{
			{
				Name:      "verify",
				Usage:     "check that every commit under refs/collab/ is signed by the forge key",
				ArgsUsage: "REPO | --all",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "all", Usage: "every repository"},
					&cli.BoolFlag{Name: "json", Usage: "print one JSON array of reports"},
				},
				Action: func(c *cli.Context) error {
					bad := 0
					err := forEachRepo(c, "export verify", func(e exportEnv, repo, dir string) (any, error) {
						rep, err := export.Verify(c.Context, dir, e.key.Public().(ed25519.PublicKey))
						if err != nil {
							return nil, err
						}
						for _, p := range rep.Problems {
							fmt.Fprintf(c.App.ErrWriter, "%s: %s\n", reponame.Display(repo), text.Show(p))
						}
						if !rep.OK() {
							bad++
						}
						if !c.Bool("json") {
							state := "good"
							if !rep.OK() {
								state = fmt.Sprintf("%d problem(s)", len(rep.Problems))
							}
							fmt.Fprintf(c.App.Writer, "%s: %d record(s), %d signed commit(s) checked, %s\n",
								reponame.Display(repo), rep.Refs, rep.Commits, state)
						}
						return struct {
							Repo string `json:"repo"`
							export.Report
						}{repo, rep}, nil
					})
					if err != nil {
						return err
					}
					if bad > 0 {
						return fault.New(fault.Internal, "verification failed in %d repository(ies)", bad)
					}
					return nil
				},
			},
			{
				Name:  "allowed-signers",
				Usage: "print the allowed-signers line for git verify-commit (gpg.ssh.allowedSignersFile)",
				Action: func(c *cli.Context) error {
					root, err := rootOf(c)
					if err != nil {
						return err
					}
					key, err := root.Key()
					if err != nil {
						return fault.Wrap(err, "forge key unavailable")
					}
					line, err := export.AllowedSigners(key.Public().(ed25519.PublicKey))
					if err != nil {
						return err
					}
					fmt.Fprintln(c.App.Writer, line)
					return nil
				},
			},
		},
	}
}

// exportEnv is what an export or a verification works with.
type exportEnv struct {
	db  *store.DB
	key ed25519.PrivateKey
	log *slog.Logger
}

// forEachRepo runs fn on the repository named by the one argument, or on
// every repository with --all, and prints the results as JSON with --json.
// With --all a failing repository does not stop the others; the command
// fails at the end.
func forEachRepo(c *cli.Context, verb string, fn func(e exportEnv, repo, dir string) (any, error)) error {
	all := c.Bool("all")
	if all == (c.NArg() == 1) || c.NArg() > 1 {
		return fault.New(fault.Usage, "usage: %s REPO | %s --all", verb, verb)
	}
	return withDB(c, func(root forge.Root, db *store.DB) error {
		key, err := root.Key()
		if err != nil {
			return fault.Wrap(err, "forge key unavailable")
		}
		log, closeLog := journal.Open(root.Dir)
		defer closeLog()
		env := exportEnv{db: db, key: key, log: log}
		var names []string
		if all {
			rs, err := repos.List(c.Context, db.R())
			if err != nil {
				return err
			}
			for _, r := range rs {
				names = append(names, r.Name)
			}
		} else {
			k, err := reponame.Key(c.Args().First())
			if err != nil {
				return err
			}
			if _, err := repos.Get(c.Context, db.R(), k); err != nil {
				return err
			}
			names = []string{k}
		}
		results := []any{}
		var failed []string
		for _, name := range names {
			res, err := func() (any, error) {
				dir, err := reponame.Dir(root.ReposDir(), name)
				if err != nil {
					return nil, err
				}
				return fn(env, name, dir)
			}()
			if err != nil && !all {
				return err
			}
			if err != nil {
				fmt.Fprintf(c.App.ErrWriter, "collab-hook: %s: %s: %v\n", verb, reponame.Display(name), err)
				failed = append(failed, reponame.Display(name))
				continue
			}
			results = append(results, res)
		}
		if c.Bool("json") {
			enc := json.NewEncoder(c.App.Writer)
			enc.SetIndent("", "  ")
			if err := enc.Encode(results); err != nil {
				return err
			}
		}
		if len(failed) > 0 {
			return fault.New(fault.Internal, "%s failed for %s", verb, strings.Join(failed, ", "))
		}
		return nil
	})
}
