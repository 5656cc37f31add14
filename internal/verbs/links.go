package verbs

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/text"
)

func issueLinkCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "link",
		Usage:     "link an issue to another (REPO#ID, or #ID here): relates, or blocks (the work queue skips an issue an open one blocks)",
		ArgsUsage: "REPO ID OTHER [--kind relates|blocks]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: issues.FieldKind, Usage: "relates (the default) or blocks: this issue blocks OTHER"},
			JSONFlag,
		},
		Action: func(c *cli.Context) error { return env.issueLink(c, false) },
	}
}

func issueUnlinkCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "unlink",
		Usage:     "remove the link between two issues, made from either side",
		ArgsUsage: "REPO ID OTHER",
		Flags:     []cli.Flag{JSONFlag},
		Action:    func(c *cli.Context) error { return env.issueLink(c, true) },
	}
}

func (env *Env) issueLink(c *cli.Context, unlink bool) error {
	args, err := Args(c, "repo", "id", "other")
	if err != nil {
		return err
	}
	in := ops.LinkIssue{Issue: ops.Ref{Repo: args[0], ID: args[1]}, Other: args[2]}
	var l ops.Linked
	if unlink {
		l, err = env.Ops().UnlinkIssue(c.Context, env.actor(), in)
	} else {
		in.Kind = c.String(issues.FieldKind)
		l, err = env.Ops().LinkIssue(c.Context, env.actor(), in)
	}
	if err != nil {
		return err
	}
	return env.Print(c, l, func(w io.Writer) {
		other := reponame.Display(l.Link.Repo) + "#" + l.Link.ID
		switch {
		case unlink && l.Changed:
			fmt.Fprintf(w, "issue %s unlinked from %s\n", l.ID, other)
		case unlink:
			fmt.Fprintf(w, "issue %s was not linked to %s\n", l.ID, other)
		case l.Changed:
			fmt.Fprintf(w, "issue %s %s %s\n", l.ID, l.Link.Kind, other)
		default:
			fmt.Fprintf(w, "issue %s already %s %s\n", l.ID, l.Link.Kind, other)
		}
	})
}

// tell says on stderr which references of what was just written stayed
// text, one line each; the write itself succeeded.
func (env *Env) tell(us []issues.Unresolved) {
	for _, u := range us {
		fmt.Fprintf(env.Stderr, "collab: note: %s\n", text.Line(u.String()))
	}
}
