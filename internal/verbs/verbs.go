// Package verbs implements the SSH verbs (issue, lease, patch, token, …)
// that collab-hook serve runs for a principal after it has split
// SSH_ORIGINAL_COMMAND into words.
package verbs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/argv"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// MaxBody bounds a body given on the command line or on stdin.
const MaxBody = text.MaxBody

// Env is what a verb runs with.
type Env struct {
	Root      forge.Root
	DB        *store.DB
	Principal string
	Stdin     io.Reader
	Stdout    io.Writer
	Stderr    io.Writer
	Now       func() time.Time
	// URL is the web UI's base URL (no trailing slash), "" when unknown.
	URL string
	// SSH is how users reach the forge (ssh://git@host:port), for hints.
	SSH string
	Log *slog.Logger
	// Notes are journal fields (ISSUE, PATCH) a verb found out, for the
	// caller's log entry about the whole verb.
	Notes []any

	svc *ops.Service
	// behalf is the verb line's --on-behalf-of and --via (withBehalf).
	behalf ops.Actor
}

// Note records a journal field for the caller's entry about this verb.
func (env *Env) Note(key string, value any) { env.Notes = append(env.Notes, key, value) }

// Ops is the use-case layer the verbs call, made on first use from env.
func (env *Env) Ops() *ops.Service {
	if env.svc == nil {
		env.svc = &ops.Service{DB: env.DB, Root: env.Root, Now: env.Now, Log: env.Log, URL: env.URL, Note: env.Note}
	}
	return env.svc
}

// actor is the principal the verbs run for, and whom it acts for when the
// verb line says (behalfFlags).
func (env *Env) actor() ops.Actor {
	return ops.Actor{Principal: env.Principal, OnBehalfOf: env.behalf.OnBehalfOf, Via: env.behalf.Via}
}

// behalfFlags are --on-behalf-of and --via, which every verb on a
// repository's records takes (CONTRACT.md "Writes may carry
// --on-behalf-of"); ops decides whether the caller may.
func behalfFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: ops.FieldOnBehalfOf, Usage: "act for this principal (needs the delegate grant)", Category: "on behalf of"},
		&cli.StringFlag{Name: ops.FieldVia, Usage: "how the request reached you (a one-line note, with --on-behalf-of)", Category: "on behalf of"},
	}
}

// withBehalf gives every verb under cmds behalfFlags, read into env
// before the verb runs.
func withBehalf(env *Env, cmds ...*cli.Command) {
	for _, c := range cmds {
		if len(c.Subcommands) > 0 {
			withBehalf(env, c.Subcommands...)
			continue
		}
		c.Flags = append(c.Flags, behalfFlags()...)
		act := c.Action
		c.Action = func(ctx *cli.Context) error {
			env.behalf = ops.Actor{OnBehalfOf: ctx.String(ops.FieldOnBehalfOf), Via: ctx.String(ops.FieldVia)}
			return act(ctx)
		}
	}
}

// flagWord words an input field the way the verbs take it: as its flag.
func flagWord(field string) string { return "--" + field }

// App builds the verb tree for env.
func App(env *Env) *cli.App {
	app := &cli.App{
		Name:                 "collab",
		Usage:                "the collab forge over ssh",
		HideHelpCommand:      true,
		HideVersion:          true,
		EnableBashCompletion: false,
		Reader:               env.Stdin,
		Writer:               env.Stdout,
		ErrWriter:            env.Stderr,
		CommandNotFound:      func(c *cli.Context, name string) {},
		Commands: []*cli.Command{
			whoamiCommand(env),
			repoCommand(env),
			issueCommand(env),
			leaseCommand(env),
			patchCommand(env),
			BranchCommand(env),
			hooksCommand(env),
			tokenCommand(env),
			webhookCommand(env),
			gerritCommand(env),
		},
	}
	for _, name := range []string{"issue", "lease", "patch", "branch", "webhook"} {
		withBehalf(env, app.Command(name))
	}
	argv.Strict(app)
	return app
}

// Overview names the verbs in one line, in the tree's order, a verb with
// a single subcommand together with it ("repo list"): what the login
// greeting lists, so that it names every verb there is.
func Overview() string {
	var names []string
	for _, c := range App(&Env{}).Commands {
		n := c.Name
		if len(c.Subcommands) == 1 {
			n += " " + c.Subcommands[0].Name
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// Run runs one verb line (already split into words) and returns its exit
// code. Refusals print one line on stderr; with --json they also print the
// refusal object on stdout.
func Run(ctx context.Context, env *Env, words []string) int {
	app := App(env)
	if len(words) > 0 && (words[0] == "help" || words[0] == "--help" || words[0] == "-h") {
		app.Setup()
		_ = cli.ShowAppHelp(cli.NewContext(app, nil, nil))
		return 0
	}
	// What Args needs to say what was wrong with the line as typed.
	app.Metadata = map[string]any{metaWords: words, metaSSH: forge.SSHCommand(env.SSH, env.URL)}
	var err error
	switch {
	case len(words) == 0 || app.Command(words[0]) == nil:
		err = argv.UnknownCommand(app, first(words))
	default:
		if err = argv.MissingValue(app, words); err == nil {
			err = app.RunContext(ctx, append([]string{"collab"}, argv.Reorder(app, words)...))
		}
	}
	if err == nil {
		return 0
	}
	fe := fault.As(store.Damaged(err))
	if env.Log != nil {
		env.Log.ErrorContext(ctx, "verb refused", "verb", strings.Join(first2(words), " "), "OUTCOME", "refused", "error", err.Error())
	}
	msg := fe.Say(flagWord)
	fmt.Fprintf(env.Stderr, "collab: %s\n", text.Line(msg))
	if WantsJSON(words) {
		obj := map[string]any{"error": msg}
		for k, v := range fe.Fields {
			obj[k] = v
		}
		if b, err := json.Marshal(obj); err == nil {
			_, _ = env.Stdout.Write(append(text.JSON(b), '\n'))
		}
	}
	return fault.ExitCode(err)
}

func first(w []string) string {
	if len(w) == 0 {
		return ""
	}
	return w[0]
}

func first2(w []string) []string {
	if len(w) > 2 {
		return w[:2]
	}
	return w
}

// WantsJSON reports whether a verb line asks for --json, so that a refusal
// made before the verb runs can answer in JSON too.
func WantsJSON(words []string) bool {
	for _, w := range words {
		if w == "--" {
			return false
		}
		if w == "--json" || w == "-json" || w == "--json=true" {
			return true
		}
	}
	return false
}

// JSONFlag is the --json flag every verb takes.
var JSONFlag = &cli.BoolFlag{Name: "json", Usage: "print one JSON document on stdout"}

// Print writes v as JSON when --json is set, else calls plain. Both pass
// the terminal's edge here, so that no stored text (a title, a body, a
// diff line) can act on the reader's terminal: plain output is shown as
// text.ShowBody does, JSON stays exact with DEL and C1 escaped (text.JSON).
func (env *Env) Print(c *cli.Context, v any, plain func(w io.Writer)) error {
	var b bytes.Buffer
	if c.Bool("json") {
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
		_, err := env.Stdout.Write(text.JSON(b.Bytes()))
		return err
	}
	plain(&b)
	_, err := io.WriteString(env.Stdout, text.ShowBody(b.String()))
	return err
}

// Body returns the value of flag name, reading stdin for "-", refusing
// oversized or non-UTF-8 text. Text from stdin loses exactly one trailing
// newline (the one echo and editors add, as gh does), so every verb that
// takes a body stores the same text for the same input.
func (env *Env) Body(c *cli.Context, name string) (string, error) {
	v := c.String(name)
	if v == "-" {
		b, err := io.ReadAll(io.LimitReader(env.Stdin, MaxBody+1))
		if err != nil {
			return "", fmt.Errorf("read body from stdin: %w", err)
		}
		v = trimNewline(string(b))
	}
	return v, fault.OnField(text.Check(name, v, MaxBody), name)
}

// trimNewline drops one trailing line end (LF or CRLF).
func trimNewline(s string) string {
	if t, ok := strings.CutSuffix(s, "\r\n"); ok {
		return t
	}
	return strings.TrimSuffix(s, "\n")
}

// Keys of the app's Metadata that Run sets for Args.
const (
	metaWords = "words" // the verb line as split, before Reorder
	metaSSH   = "ssh"   // the ssh command line users reach the forge with
)

// Args returns exactly the positional arguments names, or a usage error
// with the verb's whole path that says which are missing or extra; extra
// words after a flag's value are most likely that value split by ssh, and
// the error shows the remote command quoted.
func Args(c *cli.Context, names ...string) ([]string, error) {
	args := c.Args().Slice()
	if len(args) == len(names) {
		return args, nil
	}
	usage := "usage: " + strings.TrimSpace(argv.Path(c)+" "+strings.ToUpper(strings.Join(names, " ")))
	if len(args) < len(names) {
		return nil, fault.New(fault.Usage, "%s: missing %s", usage, strings.ToUpper(strings.Join(names[len(args):], " ")))
	}
	extra := args[len(names):]
	words, _ := c.App.Metadata[metaWords].([]string)
	if ss := argv.Splits(c.App, words); len(ss) > 0 {
		// Only as many words as are too many can belong to the value.
		s := ss[0]
		s.After = s.After[:min(len(s.After), len(extra))]
		ssh, _ := c.App.Metadata[metaSSH].(string)
		return nil, fault.New(fault.Usage, "%s: unexpected %s after %s %s; if that is one value, quote the remote command (ssh splits it into words): %s \"%s\"",
			usage, quoteWords(s.After), s.Flag, s.Value, ssh, argv.Quote(argv.Rejoin(words, s)))
	}
	return nil, fault.New(fault.Usage, "%s: unexpected %s", usage, quoteWords(extra))
}

// quoteWords names words in a message: "a", "b".
func quoteWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, " ")
}
