package main

import "github.com/urfave/cli/v2"

func webhookCommand() *cli.Command { return notYet("webhook") }
