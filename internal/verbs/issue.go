package verbs

import "github.com/urfave/cli/v2"

func issueCommand(env *Env) *cli.Command { return notYet("issue") }
