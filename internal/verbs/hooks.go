package verbs

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/forge"
)

// GitReviewUser is the git config line that makes Gerrit's git-review log
// in as the forge's ssh user rather than the local one.
func GitReviewUser(sshSetting string) string {
	return "git config --global gitreview.username " + forge.SSHUser(sshSetting)
}

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
						// stdout is the hook itself, so the hint goes beside it.
						if env.Stderr != nil {
							fmt.Fprintf(env.Stderr, "# for Gerrit's git-review: %s\n", GitReviewUser(env.SSH))
						}
					})
				},
			},
		},
	}
}
