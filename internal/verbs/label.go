package verbs

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ops"
)

// labelFlag is the repeatable --label of a filter (issue list, lease
// acquire --next): every label given must match.
func labelFlag(usage string) cli.Flag {
	return &cli.StringSliceFlag{Name: "label", Usage: usage}
}

func issueLabelCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "label",
		Usage:     "add and remove labels of an issue (write access)",
		ArgsUsage: "REPO ID [--add L]… [--remove L]…",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "add", Usage: "a label to add ([a-z0-9][a-z0-9:._-]{0,49}, e.g. bug, prio:high)"},
			&cli.StringSliceFlag{Name: "remove", Usage: "a label to remove"},
			JSONFlag,
		},
		Action: env.issueLabel,
	}
}

func (env *Env) issueLabel(c *cli.Context) error {
	add, remove := c.StringSlice("add"), c.StringSlice("remove")
	if len(add) == 0 && len(remove) == 0 {
		return fault.New(fault.Usage, "usage: issue label REPO ID [--add L]… [--remove L]…: give at least one --add or --remove")
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	ev, err := env.Ops().LabelIssue(c.Context, env.actor(), ops.LabelIssue{Issue: r, Add: add, Remove: remove})
	if err != nil {
		return err
	}
	return env.Print(c, ev, func(w io.Writer) { fmt.Fprintf(w, "issue %s labels: %s\n", ev.ID, labelsText(ev.Labels)) })
}

// labelsText is a set of labels as text lines show it.
func labelsText(ls []string) string {
	if len(ls) == 0 {
		return "(none)"
	}
	return strings.Join(ls, ", ")
}
