package verbs

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/reponame"
)

func repoCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "repo",
		Usage: "repositories",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "repositories you can read, with your access",
				Flags: []cli.Flag{JSONFlag},
				Action: func(c *cli.Context) error {
					if _, err := Args(c); err != nil {
						return err
					}
					rs, err := env.Ops().Repos(c.Context, env.actor())
					if err != nil {
						return err
					}
					return env.Print(c, rs, func(w io.Writer) {
						for _, r := range rs {
							vis := "private"
							if r.Public {
								vis = "public"
							}
							fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", reponame.Display(r.Name), vis, r.Access, r.Description)
						}
					})
				},
			},
		},
	}
}
