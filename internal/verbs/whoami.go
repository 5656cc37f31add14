package verbs

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
)

func whoamiCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "whoami",
		Usage: "the principal this key belongs to, and its grants",
		Flags: []cli.Flag{JSONFlag},
		Action: func(c *cli.Context) error {
			if _, err := Args(c); err != nil {
				return err
			}
			me, err := env.Ops().Whoami(c.Context, env.actor())
			if err != nil {
				return err
			}
			return env.Print(c, me, func(w io.Writer) {
				fmt.Fprintln(w, me.Principal)
				for _, g := range me.Grants {
					repo := "*"
					if g.Repo != principals.AllRepos {
						repo = reponame.Display(g.Repo)
					}
					fmt.Fprintf(w, "%s\t%s\n", g.Level, repo)
				}
			})
		},
	}
}
