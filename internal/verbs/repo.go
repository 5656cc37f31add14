package verbs

import "github.com/urfave/cli/v2"

func repoCommand(env *Env) *cli.Command { return notYet("repo") }
