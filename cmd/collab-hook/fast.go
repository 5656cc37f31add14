package main

import (
	"context"
	"os"
	"strings"

	"github.com/collab-forge/collab/internal/forge"
)

// fast runs the commands that sshd and git start on every login and push
// (keys-command, serve, hook) without building the whole command-line app
// first. It takes only the exact shapes collab itself writes (the hook
// shims, the forced command, install.sh's AuthorizedKeysCommand), with
// --root and --url before the command; anything else, help included, goes
// through the full parser (ok false), which gives the same result slower.
func fast(ctx context.Context, args []string) (code int, ok bool) {
	c, ok := parseFast(args, os.LookupEnv)
	if !ok {
		return 0, false
	}
	switch c.cmd {
	case "hook":
		return report(runHook(ctx, c.g, c.args[0])), true
	case "serve":
		return report(runServe(ctx, c.g, c.args[0])), true
	default: // keys-command
		return report(runKeysCommand(ctx, c.g, c.args[0], c.args[1], os.Stdout)), true
	}
}

// fastCall is a command fast runs: hook NAME, serve --as NAME (args:
// NAME), keys-command USER TYPE KEY (args: TYPE KEY).
type fastCall struct {
	g    globals
	cmd  string
	args []string
}

// parseFast recognises the shapes fast runs, reading the globals as
// urfave/cli does: a flag wins over its variable, a variable that is set
// (even empty) over the default.
func parseFast(args []string, lookup func(string) (string, bool)) (fastCall, bool) {
	g := globals{root: forge.DefaultDir}
	if v, ok := lookup("COLLAB_ROOT"); ok {
		g.root = v
	}
	g.url, _ = lookup("COLLAB_URL")
	rest := args[1:]
	for len(rest) > 0 && strings.HasPrefix(rest[0], "--") {
		name, value, eq := strings.Cut(rest[0][2:], "=")
		if !eq {
			if len(rest) < 2 {
				return fastCall{}, false
			}
			value, rest = rest[1], rest[1:]
		}
		rest = rest[1:]
		switch name {
		case "root":
			g.root = value
		case "url":
			g.url = value
		default:
			return fastCall{}, false
		}
	}
	switch {
	case len(rest) == 2 && rest[0] == "hook" && isHook(rest[1]):
		return fastCall{g, "hook", rest[1:]}, true
	case len(rest) == 3 && rest[0] == "serve" && rest[1] == "--as" && rest[2] != "" && !strings.HasPrefix(rest[2], "-"):
		return fastCall{g, "serve", rest[2:]}, true
	case len(rest) == 4 && rest[0] == "keys-command":
		return fastCall{g, "keys-command", rest[2:]}, true
	}
	return fastCall{}, false
}

func isHook(name string) bool {
	switch name {
	case "pre-receive", "proc-receive", "post-receive", "merge-scan":
		return true
	}
	return false
}
