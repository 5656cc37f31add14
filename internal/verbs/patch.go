package verbs

import "github.com/urfave/cli/v2"

func patchCommand(env *Env) *cli.Command { return notYet("patch") }
