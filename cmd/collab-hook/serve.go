package main

import "github.com/urfave/cli/v2"

func serveCommand() *cli.Command { return notYet("serve") }
