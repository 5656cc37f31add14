package verbs

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/ops"
)

func leaseCommand(env *Env) *cli.Command {
	ttl := &cli.StringFlag{Name: "ttl", Usage: "how long the lease lasts unless renewed (1s to 720h, e.g. 15m)"}
	force := &cli.BoolFlag{Name: "force", Usage: "admins: override a live lease of someone else"}
	return &cli.Command{
		Name:  "lease",
		Usage: "work leases on issues, with fencing tokens",
		Subcommands: []*cli.Command{
			{
				Name:      "acquire",
				Usage:     "claim an open issue, or with --next the oldest unclaimed one; without --ttl an open-ended assignment",
				ArgsUsage: "REPO ID [--ttl 15m] | REPO --next [--label L]… [--ttl 15m]",
				Flags:     append([]cli.Flag{ttl, force, JSONFlag}, nextFlags()...),
				Action:    env.leaseAcquire,
			},
			{
				Name:      "renew",
				Usage:     "extend your live lease, keeping its token (without --ttl: by its last TTL)",
				ArgsUsage: "REPO ID [--ttl 15m]",
				Flags:     []cli.Flag{ttl, JSONFlag},
				Action:    env.leaseRenew,
			},
			{
				Name:      "release",
				Usage:     "free your lease; prints released or not held",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{force, JSONFlag},
				Action:    env.leaseRelease,
			},
			{
				Name:      "list",
				Usage:     "live leases, oldest tenure first",
				ArgsUsage: "REPO",
				Flags:     []cli.Flag{JSONFlag},
				Action:    env.leaseList,
			},
		},
	}
}

func ttlOf(c *cli.Context) (time.Duration, error) {
	if !c.IsSet("ttl") {
		return 0, nil
	}
	return leases.ParseTTL(c.String("ttl"))
}

func (env *Env) leaseAcquire(c *cli.Context) error {
	if c.Bool("next") {
		return env.leaseNext(c)
	}
	if c.IsSet("label") {
		return fault.New(fault.Usage, "usage: lease acquire REPO --next --label L: --label picks among issues for --next")
	}
	if c.IsSet("request") {
		return fault.New(fault.Usage, "usage: lease acquire REPO --next --request KEY: --request keys a claim of --next (a named claim is already safe to retry)")
	}
	ttl, err := ttlOf(c)
	if err != nil {
		return err
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	l, err := env.Ops().AcquireLease(c.Context, env.actor(), ops.Acquire{Issue: r, TTL: ttl, Force: c.Bool("force")})
	if err != nil {
		return err
	}
	return env.Print(c, l, func(w io.Writer) { fmt.Fprintf(w, "issue %s: %s\n", l.IssueID, leaseText(l)) })
}

func (env *Env) leaseRenew(c *cli.Context) error {
	ttl, err := ttlOf(c)
	if err != nil {
		return err
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	l, err := env.Ops().RenewLease(c.Context, env.actor(), ops.Renew{Issue: r, TTL: ttl})
	if err != nil {
		return err
	}
	return env.Print(c, l, func(w io.Writer) { fmt.Fprintf(w, "issue %s: %s\n", l.IssueID, leaseText(l)) })
}

// releaseResult is what `lease release --json` prints; released matches
// the HTTP API's DELETE answer.
type releaseResult struct {
	Released bool   `json:"released"`
	Result   string `json:"result"` // "released" or "not held"
	Repo     string `json:"repo"`
	IssueID  string `json:"issue_id"`
}

func (env *Env) leaseRelease(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	rel, err := env.Ops().ReleaseLease(c.Context, env.actor(), ops.Release{Issue: r, Force: c.Bool("force")})
	if err != nil {
		return err
	}
	res := releaseResult{Released: rel.Released, Result: "not held", Repo: rel.Repo, IssueID: rel.IssueID}
	if rel.Released {
		res.Result = "released"
	}
	return env.Print(c, res, func(w io.Writer) { fmt.Fprintln(w, res.Result) })
}

func (env *Env) leaseList(c *cli.Context) error {
	repo, err := repoArg(c)
	if err != nil {
		return err
	}
	list, err := env.Ops().Leases(c.Context, env.actor(), repo)
	if err != nil {
		return err
	}
	return env.Print(c, list, func(w io.Writer) {
		for _, l := range list {
			fmt.Fprintf(w, "%s %s\n", l.IssueID, leaseText(l))
		}
	})
}
