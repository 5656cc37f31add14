package verbs

import "github.com/urfave/cli/v2"

func tokenCommand(env *Env) *cli.Command { return notYet("token") }
