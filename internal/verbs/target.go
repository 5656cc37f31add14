package verbs

import (
	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/ops"
)

// ref reads the REPO ID arguments of a verb on an issue or a patch.
func ref(c *cli.Context) (ops.Ref, error) {
	args, err := Args(c, "repo", "id")
	if err != nil {
		return ops.Ref{}, err
	}
	return ops.Ref{Repo: args[0], ID: args[1]}, nil
}

// repoArg reads the lone REPO argument.
func repoArg(c *cli.Context) (string, error) {
	args, err := Args(c, "repo")
	if err != nil {
		return "", err
	}
	return args[0], nil
}

// listFlags are the flags of issue list and patch list.
func listFlags(what, open, states string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "state", Value: open, Usage: states},
		&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many (1 to 1000)"},
		&cli.StringFlag{Name: "after", Usage: "start after this " + what + " (for the next page)"},
		JSONFlag,
	}
}
