package verbs

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
)

// whoamiResult is whoami's JSON: the principal and its grants.
type whoamiResult struct {
	Principal string             `json:"principal"`
	Grants    []principals.Grant `json:"grants"`
}

func whoamiCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "whoami",
		Usage: "the principal this key belongs to, and its grants",
		Flags: []cli.Flag{JSONFlag},
		Action: func(c *cli.Context) error {
			if _, err := Args(c); err != nil {
				return err
			}
			gs, err := principals.Grants(c.Context, env.DB.R(), env.Principal)
			if err != nil {
				return err
			}
			return env.Print(c, whoamiResult{Principal: env.Principal, Grants: gs}, func(w io.Writer) {
				fmt.Fprintln(w, env.Principal)
				for _, g := range gs {
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
