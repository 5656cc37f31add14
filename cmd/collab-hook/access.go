package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

func userCommand() *cli.Command {
	one := func(usage string, fn func(c *cli.Context, db *store.DB, name string) error) cli.ActionFunc {
		return func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fault.New(fault.Usage, "usage: %s", usage)
			}
			return withDB(c, func(_ forge.Root, db *store.DB) error { return fn(c, db, c.Args().First()) })
		}
	}
	return &cli.Command{
		Name:  "user",
		Usage: "principals: people and agents",
		Subcommands: []*cli.Command{
			{Name: "add", ArgsUsage: "NAME", Action: one("user add NAME", func(c *cli.Context, db *store.DB, name string) error {
				if err := principals.Add(c.Context, db, name, time.Now()); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "added %s\n", name)
				return nil
			})},
			{Name: "disable", ArgsUsage: "NAME", Action: one("user disable NAME", func(c *cli.Context, db *store.DB, name string) error {
				if err := principals.SetDisabled(c.Context, db, name, true); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "disabled %s\n", name)
				return nil
			})},
			{Name: "enable", ArgsUsage: "NAME", Action: one("user enable NAME", func(c *cli.Context, db *store.DB, name string) error {
				if err := principals.SetDisabled(c.Context, db, name, false); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "enabled %s\n", name)
				return nil
			})},
			{Name: "email", ArgsUsage: "NAME ADDR", Usage: "the e-mail address NAME may be named by as a reviewer", Action: func(c *cli.Context) error {
				if c.NArg() != 2 {
					return fault.New(fault.Usage, "usage: user email NAME ADDR")
				}
				return withDB(c, func(_ forge.Root, db *store.DB) error {
					name, addr := c.Args().Get(0), c.Args().Get(1)
					if err := principals.SetEmail(c.Context, db, name, addr); err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "%s is %s\n", name, strings.ToLower(addr))
					return nil
				})
			}},
			{Name: "list", Action: func(c *cli.Context) error {
				return withDB(c, func(_ forge.Root, db *store.DB) error {
					ps, err := principals.List(c.Context, db.R())
					if err != nil {
						return err
					}
					for _, p := range ps {
						state := "enabled"
						if p.Disabled {
							state = "disabled"
						}
						if p.Email != "" {
							state += "\t" + p.Email
						}
						fmt.Fprintf(c.App.Writer, "%s\t%s\n", p.Name, state)
					}
					return nil
				})
			}},
		},
	}
}

func keyCommand() *cli.Command {
	return &cli.Command{
		Name:  "key",
		Usage: "SSH keys of principals",
		Subcommands: []*cli.Command{
			{
				Name:      "add",
				ArgsUsage: `NAME "ssh-ed25519 AAAA… comment"  (or a .pub file, or - for stdin)`,
				Action: func(c *cli.Context) error {
					if c.NArg() != 2 {
						return fault.New(fault.Usage, `usage: key add NAME "ssh-ed25519 AAAA… comment"`)
					}
					line, err := keyText(c.Args().Get(1))
					if err != nil {
						return err
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						k, existed, err := principals.AddKey(c.Context, db, c.Args().First(), line, time.Now())
						if err != nil {
							return err
						}
						if existed {
							fmt.Fprintf(c.App.Writer, "%s already belongs to %s\n", k.Fingerprint, k.Principal)
							return nil
						}
						fmt.Fprintf(c.App.Writer, "added %s to %s\n", k.Fingerprint, k.Principal)
						return nil
					})
				},
			},
			{
				Name:      "list",
				ArgsUsage: "[NAME]",
				Action: func(c *cli.Context) error {
					if c.NArg() > 1 {
						return fault.New(fault.Usage, "usage: key list [NAME]")
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						ks, err := principals.Keys(c.Context, db.R(), c.Args().First())
						if err != nil {
							return err
						}
						for _, k := range ks {
							fmt.Fprintf(c.App.Writer, "%s\t%s\t%s\t%s\n", k.Fingerprint, k.Principal, k.Type, text.Show(k.Comment))
						}
						return nil
					})
				},
			},
			{
				Name:      "remove",
				ArgsUsage: "FINGERPRINT",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return fault.New(fault.Usage, "usage: key remove FINGERPRINT")
					}
					return withDB(c, func(_ forge.Root, db *store.DB) error {
						k, err := principals.RemoveKey(c.Context, db, c.Args().First())
						if err != nil {
							return err
						}
						fmt.Fprintf(c.App.Writer, "removed %s of %s\n", k.Fingerprint, k.Principal)
						return nil
					})
				},
			},
		},
	}
}

func grantCommand() *cli.Command {
	return &cli.Command{
		Name:      "grant",
		Usage:     "give a principal read, write or admin access to a repository (* for every one), or delegate: write and acting on behalf of others",
		ArgsUsage: "NAME REPO read|write|admin|delegate",
		Action: func(c *cli.Context) error {
			if c.NArg() != 3 {
				return fault.New(fault.Usage, "usage: grant NAME REPO read|write|admin|delegate")
			}
			name := c.Args().Get(0)
			repo, err := principals.GrantKey(c.Args().Get(1))
			if err != nil {
				return err
			}
			if c.Args().Get(2) == access.Delegate {
				return withDB(c, func(_ forge.Root, db *store.DB) error {
					if err := principals.SetDelegate(c.Context, db, name, repo); err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "granted %s delegate on %s\n", name, displayGrant(repo))
					return nil
				})
			}
			level, err := access.ParseLevel(c.Args().Get(2))
			if err != nil {
				return fault.New(fault.Usage, "bad access level %q: want read, write, admin or delegate", text.Clip(c.Args().Get(2)))
			}
			return withDB(c, func(_ forge.Root, db *store.DB) error {
				if err := principals.SetGrant(c.Context, db, name, repo, level); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "granted %s %s on %s\n", name, level, displayGrant(repo))
				return nil
			})
		},
	}
}

func revokeCommand() *cli.Command {
	return &cli.Command{
		Name:      "revoke",
		Usage:     "remove a principal's grant on a repository (* for the every-repository grant)",
		ArgsUsage: "NAME REPO",
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fault.New(fault.Usage, "usage: revoke NAME REPO")
			}
			name := c.Args().Get(0)
			repo, err := principals.GrantKey(c.Args().Get(1))
			if err != nil {
				return err
			}
			return withDB(c, func(_ forge.Root, db *store.DB) error {
				had, err := principals.Revoke(c.Context, db, name, repo)
				if err != nil {
					return err
				}
				if !had {
					fmt.Fprintf(c.App.Writer, "%s had no grant on %s\n", name, displayGrant(repo))
					return nil
				}
				fmt.Fprintf(c.App.Writer, "revoked %s on %s\n", name, displayGrant(repo))
				return nil
			})
		},
	}
}

func displayGrant(repo string) string {
	if repo == principals.AllRepos {
		return "every repository"
	}
	return reponame.Display(repo)
}

// forcedCommand is how this program's authorized_keys lines start serve.
func forcedCommand(root forge.Root) (principals.Command, error) {
	bin, err := binary()
	if err != nil {
		return principals.Command{}, err
	}
	return principals.Command{Binary: bin, Root: root.Dir}, nil
}

func authorizedKeysCommand() *cli.Command {
	return &cli.Command{
		Name:  "authorized-keys",
		Usage: "print a whole authorized_keys file with a forced command per key",
		Action: func(c *cli.Context) error {
			if c.NArg() != 0 {
				return fault.New(fault.Usage, "usage: authorized-keys")
			}
			return withDB(c, func(root forge.Root, db *store.DB) error {
				fc, err := forcedCommand(root)
				if err != nil {
					return err
				}
				return principals.WriteAuthorizedKeys(c.Context, db.R(), fc, c.App.Writer)
			})
		},
	}
}

func keysCommandCommand() *cli.Command {
	return &cli.Command{
		Name:      "keys-command",
		Usage:     "for sshd's AuthorizedKeysCommand … %u %t %k: print the key's line, or nothing",
		ArgsUsage: "USER TYPE KEY",
		Action: func(c *cli.Context) error {
			if c.NArg() != 3 {
				return fault.New(fault.Usage, "usage: keys-command USER TYPE KEY")
			}
			return runKeysCommand(c.Context, globalsOf(c), c.Args().Get(1), c.Args().Get(2), c.App.Writer)
		},
	}
}

// runKeysCommand prints the authorized_keys line of the key given as sshd's
// %t and %k, or nothing. USER is sshd's business (AllowUsers, Match); only
// the key decides.
func runKeysCommand(ctx context.Context, g globals, typ, blob string, w io.Writer) error {
	root, err := forge.New(g.root)
	if err != nil {
		return err
	}
	fc, err := forcedCommand(root)
	if err != nil {
		return err
	}
	line, err := principals.KeysCommand(ctx, fc, root.DBPath(), root.DBLocation(), typ, blob)
	if err != nil || line == "" {
		return err
	}
	_, err = fmt.Fprintln(w, line)
	return err
}

// keyText is the key line given to key add: the text itself, a public key
// file (as gitolite takes them), or stdin for "-". One trailing newline is
// dropped; any other newline is refused by the parser.
func keyText(arg string) (string, error) {
	var r io.Reader
	switch {
	case arg == "-":
		r = os.Stdin
	case !strings.ContainsAny(arg, " \t\n"):
		f, err := os.Open(arg)
		if err != nil {
			return arg, nil // not a file: let the parser say what is wrong
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			return arg, nil
		}
		r = f
	default:
		return arg, nil
	}
	b, err := readLimited(r, principals.MaxKeyLine+1)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(b, "\n"), nil
}

func readLimited(r io.Reader, limit int) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)))
	if err != nil {
		return "", fmt.Errorf("read key from stdin: %w", err)
	}
	if len(b) >= limit {
		return "", fault.New(fault.Usage, "bad public key: too long")
	}
	return string(b), nil
}
