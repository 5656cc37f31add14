package verbs

import (
	"database/sql"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/reponame"
)

func issueCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "issue",
		Usage: "issues and comments",
		Subcommands: []*cli.Command{
			{
				Name:      "new",
				Usage:     "file an issue",
				ArgsUsage: "REPO --title T [--body B|-]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "title", Usage: "one-line title (required)"},
					&cli.StringFlag{Name: "body", Usage: "markdown body; - reads stdin"},
					JSONFlag,
				},
				Action: env.issueNew,
			},
			{
				Name:      "list",
				Usage:     "list issues, newest first",
				ArgsUsage: "REPO [--state open|closed|all] [--limit N] [--after ID]",
				Flags:     listFlags("issue", issues.Open, "open, closed or all"),
				Action:    env.issueList,
			},
			{
				Name:      "show",
				Usage:     "an issue with its comments, lease and linked patches",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    env.issueShow,
			},
			{
				Name:      "comment",
				Usage:     "comment on an issue",
				ArgsUsage: "REPO ID --body B|- [--lease-token N]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "body", Usage: "markdown body; - reads stdin (required)"},
					leaseTokenFlag(),
					JSONFlag,
				},
				Action: env.issueComment,
			},
			{
				Name:      "close",
				Usage:     "close an issue",
				ArgsUsage: "REPO ID [--lease-token N]",
				Flags:     []cli.Flag{leaseTokenFlag(), JSONFlag},
				Action:    func(c *cli.Context) error { return env.issueSetState(c, issues.Closed) },
			},
			{
				Name:      "reopen",
				Usage:     "reopen an issue",
				ArgsUsage: "REPO ID [--lease-token N]",
				Flags:     []cli.Flag{leaseTokenFlag(), JSONFlag},
				Action:    func(c *cli.Context) error { return env.issueSetState(c, issues.Open) },
			},
		},
	}
}

func leaseTokenFlag() cli.Flag {
	return &cli.Int64Flag{Name: "lease-token", Usage: "fencing token of your lease on the issue; the write is refused unless it is current"}
}

// leaseToken returns the --lease-token value and whether it was given.
func leaseToken(c *cli.Context) (int64, bool, error) {
	if !c.IsSet("lease-token") {
		return 0, false, nil
	}
	n := c.Int64("lease-token")
	if n <= 0 {
		return 0, false, fault.New(fault.Usage, "bad lease token %d: want a positive integer", n)
	}
	return n, true, nil
}

func (env *Env) clock() time.Time {
	if env.Now != nil {
		return env.Now()
	}
	return time.Now()
}

func (env *Env) issueURL(key, id string) string {
	if env.URL == "" {
		return ""
	}
	return env.URL + "/" + reponame.Display(key) + "/-/issues/" + id
}

func (env *Env) issueNew(c *cli.Context) error {
	if !c.IsSet("title") {
		return fault.New(fault.Usage, "usage: issue new REPO --title T [--body B]: --title is required")
	}
	key, err := env.repoArg(c, access.Read)
	if err != nil {
		return err
	}
	body, err := env.Body(c, "body")
	if err != nil {
		return err
	}
	var is issues.Issue
	err = env.DB.Write(c.Context, func(tx *sql.Tx) error {
		is, err = issues.New(c.Context, tx, key, env.Principal, c.String("title"), body, env.clock())
		return err
	})
	if err != nil {
		return err
	}
	env.Note("ISSUE", is.ID)
	return env.Print(c, is, func(w io.Writer) {
		fmt.Fprintf(w, "issue %s filed\n", is.ID)
		if u := env.issueURL(key, is.ID); u != "" {
			fmt.Fprintln(w, u)
		}
	})
}

func (env *Env) issueList(c *cli.Context) error {
	if err := issues.CheckState(c.String("state")); err != nil {
		return err
	}
	if err := checkLimit(c); err != nil {
		return err
	}
	key, err := env.repoArg(c, access.Read)
	if err != nil {
		return err
	}
	list, err := issues.List(c.Context, env.DB.R(), key, c.String("state"), c.Int("limit"), c.String("after"), env.clock())
	if err != nil {
		return err
	}
	return env.Print(c, list, func(w io.Writer) {
		for _, is := range list {
			lease := ""
			if is.Lease != nil {
				lease = " [leased by " + is.Lease.Holder + "]"
			}
			fmt.Fprintf(w, "%s %-6s %s%s\n", is.ID, is.State, is.Title, lease)
		}
	})
}

func (env *Env) issueShow(c *cli.Context) error {
	t, err := env.issueTarget(c, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	d, err := issues.Get(c.Context, env.DB.R(), t.key, t.id, env.clock())
	if err != nil {
		return err
	}
	return env.Print(c, d, func(w io.Writer) { env.printIssue(w, d) })
}

func (env *Env) printIssue(w io.Writer, d issues.Detail) {
	fmt.Fprintf(w, "issue %s: %s\n", d.ID, d.Title)
	fmt.Fprintf(w, "state %s · filed by %s at %s\n", d.State, d.Author, d.CreatedAt)
	if u := env.issueURL(d.Repo, d.ID); u != "" {
		fmt.Fprintln(w, u)
	}
	if d.Lease != nil {
		fmt.Fprintf(w, "lease: %s\n", leaseText(*d.Lease))
	} else {
		fmt.Fprintln(w, "lease: free")
	}
	for _, t := range d.Tenures {
		end := "live"
		if t.EndReason != nil {
			end = *t.EndReason + " at " + *t.EndedAt
		}
		fmt.Fprintf(w, "  tenure %d: %s from %s, %s\n", t.Token, t.Holder, t.AcquiredAt, end)
	}
	if len(d.Patches) > 0 {
		fmt.Fprintf(w, "patches: %s\n", strings.Join(d.Patches, " "))
	}
	if len(d.Refs) > 0 {
		refs := make([]string, len(d.Refs))
		for i, r := range d.Refs {
			refs[i] = r.String()
		}
		fmt.Fprintf(w, "references: %s\n", strings.Join(refs, " "))
	}
	if d.Body != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(d.Body, "\n"))
	}
	for _, cm := range d.Comments {
		fmt.Fprintf(w, "\n--- comment %s by %s at %s\n%s\n", cm.ID, cm.Author, cm.CreatedAt, strings.TrimRight(cm.Body, "\n"))
	}
}

func leaseText(l leases.Lease) string {
	exp := "open-ended"
	if l.ExpiresAt != nil {
		exp = "expires " + *l.ExpiresAt
	}
	return fmt.Sprintf("held by %s, token %d, %s", l.Holder, l.Token, exp)
}

func (env *Env) issueComment(c *cli.Context) error {
	if !c.IsSet("body") {
		return fault.New(fault.Usage, "usage: issue comment REPO ID --body B: --body is required (- reads stdin)")
	}
	token, fenced, err := leaseToken(c)
	if err != nil {
		return err
	}
	t, err := env.issueTarget(c, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	body, err := env.Body(c, "body")
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	var cm issues.Comment
	err = env.DB.Write(c.Context, func(tx *sql.Tx) error {
		now := env.clock()
		if fenced {
			if err := leases.Fence(c.Context, tx, key, id, env.Principal, token, now); err != nil {
				return err
			}
		}
		cm, err = issues.AddComment(c.Context, tx, key, id, env.Principal, body, now)
		return err
	})
	if err != nil {
		return err
	}
	return env.Print(c, cm, func(w io.Writer) { fmt.Fprintf(w, "comment %s on issue %s\n", cm.ID, id) })
}

// issueSetState closes or reopens an issue by the rule of issues.Change.
func (env *Env) issueSetState(c *cli.Context, state string) error {
	token, _, err := leaseToken(c)
	if err != nil {
		return err
	}
	t, err := env.issueTarget(c, access.Read, issues.Resolve)
	if err != nil {
		return err
	}
	id := t.id
	var is issues.Issue
	var changed bool
	err = env.DB.Write(c.Context, func(tx *sql.Tx) error {
		is, changed, err = issues.Change(c.Context, tx, t.key, id, issues.Edit{
			Principal: env.Principal, Level: t.lvl, State: &state, LeaseToken: token,
		}, env.clock())
		return err
	})
	if err != nil {
		return err
	}
	return env.Print(c, is, func(w io.Writer) {
		if !changed {
			fmt.Fprintf(w, "issue %s was already %s\n", id, state)
			return
		}
		fmt.Fprintf(w, "issue %s %s\n", id, map[string]string{issues.Closed: "closed", issues.Open: "reopened"}[state])
	})
}
