package main

import "github.com/urfave/cli/v2"

func hookCommand() *cli.Command { return notYet("hook") }
