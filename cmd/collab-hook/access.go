package main

import "github.com/urfave/cli/v2"

func userCommand() *cli.Command { return notYet("user") }

func keyCommand() *cli.Command { return notYet("key") }

func grantCommand() *cli.Command { return notYet("grant") }

func revokeCommand() *cli.Command { return notYet("revoke") }

func authorizedKeysCommand() *cli.Command { return notYet("authorized-keys") }

func keysCommandCommand() *cli.Command { return notYet("keys-command") }
