// Package argv lets flags come anywhere on a command line.
//
// urfave/cli v2, like Go's flag package, stops parsing flags at the first
// positional argument, so "repo create demo --public" would take --public as
// a second argument. The contract lets flags come before or after positional
// arguments (as git and gh do), with "--" ending them. Reorder moves, at
// every command level, each flag and its value in front of the positional
// words before the words reach the parser.
package argv

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// Reorder returns args (without the program name) rearranged for app.
func Reorder(app *cli.App, args []string) []string {
	head, pos, dashdash := split(app.Flags, app.Commands, args)
	return join(head, pos, dashdash)
}

// Positional returns the positional arguments app's parser will see for
// args: what Reorder moves behind the flags.
func Positional(app *cli.App, args []string) []string {
	_, pos, _ := split(app.Flags, app.Commands, args)
	return pos
}

// split sorts the words of one command level into those that go first
// (flags with their values, and a subcommand's name followed by its own
// head) and the positional words; dashdash reports a "--" in args.
func split(flags []cli.Flag, cmds []*cli.Command, args []string) (head, pos []string, dashdash bool) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w == "--" {
			return head, append(pos, args[i+1:]...), true
		}
		if isFlag(w) {
			head = append(head, w)
			if !strings.Contains(w, "=") && takesValue(flags, w) && i+1 < len(args) {
				i++
				head = append(head, args[i])
			}
			continue
		}
		if len(pos) == 0 && len(cmds) > 0 {
			head = append(head, w)
			if c := find(cmds, w); c != nil {
				h, p, d := split(c.Flags, c.Subcommands, args[i+1:])
				return append(head, h...), p, d
			}
			// Not a command: leave the rest for the parser to refuse.
			return append(head, args[i+1:]...), nil, false
		}
		pos = append(pos, w)
	}
	return head, pos, false
}

func join(flagWords, pos []string, dashdash bool) []string {
	out := append([]string{}, flagWords...)
	if !dashdash {
		for _, p := range pos {
			if isFlag(p) {
				dashdash = true
				break
			}
		}
	}
	if dashdash && len(pos) > 0 {
		out = append(out, "--")
	}
	return append(out, pos...)
}

// isFlag reports whether w looks like a flag; "-" alone is a value (stdin).
func isFlag(w string) bool { return len(w) > 1 && w[0] == '-' }

func flagName(w string) string {
	n := strings.TrimLeft(w, "-")
	if i := strings.IndexByte(n, '='); i >= 0 {
		n = n[:i]
	}
	return n
}

func takesValue(flags []cli.Flag, w string) bool {
	name := flagName(w)
	for _, f := range flags {
		for _, n := range f.Names() {
			if n != name {
				continue
			}
			if _, ok := f.(*cli.BoolFlag); ok {
				return false
			}
			return true
		}
	}
	return false
}

func find(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// Strict makes every command of app refuse bad usage with a fault.Usage
// error (exit 2) instead of urfave's defaults: a flag it cannot parse, and
// a group run without a subcommand (help, exit 0) or with an unknown one
// ("No help topic", exit 3).
func Strict(app *cli.App) {
	app.OnUsageError = usageError
	strict(app.Commands)
}

func strict(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = usageError
		if len(c.Subcommands) > 0 && c.Action == nil {
			c.Action = groupAction
		}
		strict(c.Subcommands)
	}
}
