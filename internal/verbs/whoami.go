package verbs

import "github.com/urfave/cli/v2"

func whoamiCommand(env *Env) *cli.Command { return notYet("whoami") }
