package main

import "github.com/urfave/cli/v2"

func exportCommand() *cli.Command { return notYet("export") }
