package main

import "github.com/urfave/cli/v2"

func fsckCommand() *cli.Command { return notYet("fsck") }
