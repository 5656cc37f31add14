package verbs

import (
	"database/sql"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
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
				Usage:     "claim an open issue; without --ttl an open-ended assignment",
				ArgsUsage: "REPO ID [--ttl 15m]",
				Flags:     []cli.Flag{ttl, force, JSONFlag},
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

// leaseTarget is the issue of a lease verb that takes --force: write
// access is needed, and --force is refused to non-admins.
func (env *Env) leaseTarget(c *cli.Context, resolve resolver) (t target, force bool, err error) {
	t, err = env.issueTarget(c, access.Write, resolve)
	if err != nil {
		return target{}, false, err
	}
	if c.Bool("force") && t.lvl < access.Admin {
		return target{}, false, fault.New(fault.Denied, "permission denied: only a repository admin may override a lease (--force)")
	}
	return t, c.Bool("force"), nil
}

func (env *Env) leaseAcquire(c *cli.Context) error {
	ttl, err := ttlOf(c)
	if err != nil {
		return err
	}
	t, force, err := env.leaseTarget(c, issues.ResolveOpen)
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	if !force {
		if err := leases.CheckFree(c.Context, env.DB.R(), key, id, env.Principal, env.clock()); err != nil {
			return err
		}
	}
	var l leases.Lease
	err = env.DB.Write(c.Context, func(tx *sql.Tx) error {
		l, err = leases.Acquire(c.Context, tx, key, id, env.Principal, ttl, force, env.clock())
		return err
	})
	if err != nil {
		return err
	}
	return env.Print(c, l, func(w io.Writer) { fmt.Fprintf(w, "issue %s: %s\n", id, leaseText(l)) })
}

func (env *Env) leaseRenew(c *cli.Context) error {
	ttl, err := ttlOf(c)
	if err != nil {
		return err
	}
	t, err := env.issueTarget(c, access.Write, issues.ResolveLeased)
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	var l leases.Lease
	err = env.DB.Write(c.Context, func(tx *sql.Tx) error {
		l, err = leases.Renew(c.Context, tx, key, id, env.Principal, ttl, env.clock())
		return err
	})
	if err != nil {
		return err
	}
	return env.Print(c, l, func(w io.Writer) { fmt.Fprintf(w, "issue %s: %s\n", id, leaseText(l)) })
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
	t, force, err := env.leaseTarget(c, issues.ResolveIssueOrLease)
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	var released bool
	err = env.DB.Write(c.Context, func(tx *sql.Tx) error {
		released, err = leases.Release(c.Context, tx, key, id, env.Principal, force, env.clock())
		return err
	})
	if err != nil {
		return err
	}
	res := releaseResult{Released: released, Result: "not held", Repo: key, IssueID: id}
	if released {
		res.Result = "released"
	}
	return env.Print(c, res, func(w io.Writer) { fmt.Fprintln(w, res.Result) })
}

func (env *Env) leaseList(c *cli.Context) error {
	key, err := env.repoArg(c, access.Read)
	if err != nil {
		return err
	}
	list, err := leases.List(c.Context, env.DB.R(), key, env.clock())
	if err != nil {
		return err
	}
	return env.Print(c, list, func(w io.Writer) {
		for _, l := range list {
			fmt.Fprintf(w, "%s %s\n", l.IssueID, leaseText(l))
		}
	})
}
