package argv

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
)

// Usage errors that say what was wrong and how to fix it: the full verb
// path, flags spelt with two dashes, what was missing or extra, a "did you
// mean" for a near miss, and the hint to quote the remote command when ssh
// split a value (ssh joins its words with spaces; the forge splits them
// again like a shell, so "--title Two words" arrives as three words).

// Path is the verb path of the command c runs ("issue new"), parents
// included, without the program's name.
func Path(c *cli.Context) string {
	var names []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" && (l.App == nil || l.Command.Name != l.App.Name) {
			names = append(names, l.Command.Name)
		}
	}
	slices.Reverse(names)
	return strings.Join(names, " ")
}

// Dashes spells a flag name the way users type it: --name (-n for one
// letter).
func Dashes(name string) string {
	name = strings.TrimLeft(name, "-")
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// Suggest returns the candidate closest to word when it is a plausible
// typo of it (at most 2 edits for a word of 5 letters or more, 1 for a
// shorter one, or a prefix of 3 letters or more), else "".
func Suggest(word string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := distance(word, c)
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			d = 1
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := 1
	if len(word) >= 5 {
		limit = 2
	}
	if bestD > limit {
		return ""
	}
	return best
}

// DidYouMean is Suggest worded for a message: ` (did you mean "X"?)` or "".
func DidYouMean(word string, candidates []string) string {
	if s := Suggest(word, candidates); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// distance is the Levenshtein distance of a and b (bytes; names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// visibleNames are the names of cmds users may type.
func visibleNames(cmds []*cli.Command) []string {
	var names []string
	for _, s := range cmds {
		if !s.Hidden && s.Name != "help" {
			names = append(names, s.Name)
		}
	}
	return names
}

// flagNames are the names of c's flags, with their dashes.
func flagNames(flags []cli.Flag) []string {
	var out []string
	for _, f := range flags {
		if n := f.Names(); len(n) > 0 && n[0] != "help" {
			out = append(out, Dashes(n[0]))
		}
	}
	return out
}

// usageError rewords the parser's refusals (Go's flag package: one dash,
// no command) for a user at an ssh prompt.
func usageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	where := ""
	var flags []cli.Flag
	if c != nil {
		where = Path(c)
		if c.Command != nil {
			flags = c.Command.Flags
		} else if c.App != nil {
			flags = c.App.Flags
		}
	}
	names := flagNames(flags)
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: "); ok {
		f := Dashes(name)
		m := fmt.Sprintf("unknown flag %s", f)
		if where != "" {
			m += " for " + where
		}
		if s := Suggest(f, names); s != "" {
			return fault.New(fault.Usage, "%s (did you mean %s?)", m, s)
		}
		if len(names) > 0 {
			m += " (flags: " + strings.Join(names, ", ") + ")"
		}
		return fault.New(fault.Usage, "%s", m)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return fault.New(fault.Usage, "flag %s needs a value", Dashes(name))
	}
	// invalid value "x" for flag -limit: parse error
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			name, why, _ := strings.Cut(rest[i+len(" for flag -"):], ": ")
			return fault.New(fault.Usage, "invalid value %s for %s: %s", rest[:i], Dashes(name), why)
		}
	}
	return fault.New(fault.Usage, "%s", msg)
}

func groupAction(c *cli.Context) error {
	names := visibleNames(c.Command.Subcommands)
	path := Path(c)
	if c.NArg() == 0 {
		return fault.New(fault.Usage, "usage: %s SUBCOMMAND (one of: %s)", path, strings.Join(names, ", "))
	}
	w := c.Args().First()
	return fault.New(fault.Usage, "unknown subcommand %q of %s%s; one of: %s", w, path, DidYouMean(w, names), strings.Join(names, ", "))
}

// UnknownCommand is the refusal of a first word that names no command of
// app.
func UnknownCommand(app *cli.App, word string) error {
	return fault.New(fault.Usage, "unknown command %q%s; run 'help' for the list", word, DidYouMean(word, visibleNames(app.Commands)))
}

// Split is a value flag's value followed by positional words on the
// command line: what ssh makes of "--title Two words" typed without
// quoting the remote command.
type Split struct {
	Flag, Value string
	After       []string
}

// Splits finds, at the command level the words reach, each value flag
// whose value is followed by positional words, in order.
func Splits(app *cli.App, words []string) []Split {
	flags, cmds := app.Flags, app.Commands
	var out []Split
	var cur *Split
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			break
		}
		if isFlag(w) {
			cur = nil
			if !strings.Contains(w, "=") && takesValue(flags, w) && i+1 < len(words) {
				i++
				out = append(out, Split{Flag: Dashes(flagName(w)), Value: words[i]})
				cur = &out[len(out)-1]
			} else if n, v, ok := strings.Cut(w, "="); ok && takesValue(flags, n) {
				out = append(out, Split{Flag: Dashes(flagName(n)), Value: v})
				cur = &out[len(out)-1]
			}
			continue
		}
		if c := find(cmds, w); c != nil && len(cmds) > 0 {
			flags, cmds, out, cur = c.Flags, c.Subcommands, nil, nil
			continue
		}
		if cur != nil {
			cur.After = append(cur.After, w)
		}
	}
	var split []Split
	for _, s := range out {
		if len(s.After) > 0 {
			split = append(split, s)
		}
	}
	return split
}

// MissingValue refuses a value flag that ends the command line: the
// parser would otherwise take the positional word moved behind it as its
// value (issue list demo --state → --state demo).
func MissingValue(app *cli.App, words []string) error {
	flags, cmds := app.Flags, app.Commands
	for i, w := range words {
		if w == "--" {
			return nil
		}
		if c := find(cmds, w); c != nil && !isFlag(w) {
			flags, cmds = c.Flags, c.Subcommands
			continue
		}
		if isFlag(w) && !strings.Contains(w, "=") && takesValue(flags, w) && i == len(words)-1 {
			return fault.New(fault.Usage, "flag %s needs a value", Dashes(flagName(w)))
		}
	}
	return nil
}

// Quote renders words as one shell command line: each word that needs it
// in single quotes.
func Quote(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = quoteWord(w)
	}
	return strings.Join(out, " ")
}

func quoteWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// Rejoin returns words with the value of s and the positional words after
// it joined into one word, as the user meant them.
func Rejoin(words []string, s Split) []string {
	for i, w := range words {
		if !isFlag(w) || Dashes(flagName(w)) != s.Flag {
			continue
		}
		val, at := s.Value, i+1 // --flag VALUE AFTER…
		if n, v, ok := strings.Cut(w, "="); ok {
			if v != s.Value {
				continue
			}
			w, at = n, i // --flag=VALUE AFTER…
		} else if i+1 >= len(words) || words[i+1] != s.Value {
			continue
		}
		end := at + 1 + len(s.After)
		if end > len(words) || !slices.Equal(words[at+1:end], s.After) {
			continue
		}
		joined := strings.Join(append([]string{val}, s.After...), " ")
		out := append(append([]string{}, words[:i]...), w, joined)
		return append(out, words[end:]...)
	}
	return words
}
