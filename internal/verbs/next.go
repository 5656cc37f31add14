package verbs

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ops"
)

// nextFlags are the flags lease acquire takes for the work queue.
func nextFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "next", Usage: "claim the oldest open issue with no live lease (and every --label) instead of a named one"},
		labelFlag("with --next: only issues carrying this label (repeatable: all must match)"),
		&cli.StringFlag{Name: "request", Usage: "with --next: an idempotency key (1-128 printable bytes, fresh per claim): a retry with it gets the same claim back"},
	}
}

// leaseNext is `lease acquire REPO --next [--label L]… [--ttl D] [--request KEY]`.
func (env *Env) leaseNext(c *cli.Context) error {
	if c.NArg() != 1 {
		return fault.New(fault.Usage, "usage: lease acquire REPO --next [--label L]… [--ttl 15m] [--request KEY]: --next takes no issue id")
	}
	if c.Bool("force") {
		return fault.New(fault.Usage, "usage: lease acquire REPO --next: --force names no lease to override")
	}
	ttl, err := ttlOf(c)
	if err != nil {
		return err
	}
	l, err := env.Ops().AcquireNext(c.Context, env.actor(), ops.AcquireNext{Repo: c.Args().First(), Labels: c.StringSlice("label"), TTL: ttl,
		Request: c.String("request"), Keyed: c.IsSet("request")})
	if err != nil {
		return err
	}
	return env.Print(c, l, func(w io.Writer) { fmt.Fprintf(w, "issue %s: %s\n", l.IssueID, leaseText(l)) })
}
