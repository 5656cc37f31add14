package verbs

import "github.com/urfave/cli/v2"

func leaseCommand(env *Env) *cli.Command { return notYet("lease") }
