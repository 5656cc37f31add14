package verbs

import "github.com/urfave/cli/v2"

func hooksCommand(env *Env) *cli.Command { return notYet("hooks") }
