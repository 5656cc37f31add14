package verbs

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab"
)

func hooksCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "hooks",
		Usage: "client-side git hooks",
		Subcommands: []*cli.Command{
			{
				Name:  "commit-msg",
				Usage: "print the commit-msg hook that stamps Patch: trailers",
				Flags: []cli.Flag{JSONFlag},
				Action: func(c *cli.Context) error {
					if _, err := Args(c); err != nil {
						return err
					}
					return env.Print(c, map[string]string{"name": "commit-msg", "script": collab.CommitMsgHook}, func(w io.Writer) {
						_, _ = io.WriteString(w, collab.CommitMsgHook)
					})
				},
			},
		},
	}
}
