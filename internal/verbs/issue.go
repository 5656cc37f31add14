package verbs

import (
	"context"
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
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "state", Value: issues.Open, Usage: "open, closed or all"},
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many (1 to 1000)"},
					&cli.StringFlag{Name: "after", Usage: "start after this issue (for the next page)"},
					JSONFlag,
				},
				Action: env.issueList,
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

// issueRepo turns a client-given repository name into its key after
// checking that the principal has at least need there.
func (env *Env) issueRepo(ctx context.Context, name string, need access.Level) (string, access.Level, error) {
	key, err := reponame.Key(name)
	if err != nil {
		return "", access.None, err
	}
	lvl, err := access.Require(ctx, env.DB.R(), env.Principal, key, need)
	return key, lvl, err
}

func (env *Env) issueURL(key, id string) string {
	if env.URL == "" {
		return ""
	}
	return env.URL + "/" + reponame.Display(key) + "/-/issues/" + id
}

func (env *Env) issueNew(c *cli.Context) error {
	args, err := Args(c, "repo")
	if err != nil {
		return err
	}
	if !c.IsSet("title") {
		return fault.New(fault.Usage, "usage: issue new REPO --title T [--body B]: --title is required")
	}
	key, _, err := env.issueRepo(c.Context, args[0], access.Read)
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
	args, err := Args(c, "repo")
	if err != nil {
		return err
	}
	if err := issues.CheckState(c.String("state")); err != nil {
		return err
	}
	if n := c.Int("limit"); n < 1 || n > 1000 {
		return fault.New(fault.Usage, "bad limit %d: want 1 to 1000", n)
	}
	key, _, err := env.issueRepo(c.Context, args[0], access.Read)
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
	args, err := Args(c, "repo", "id")
	if err != nil {
		return err
	}
	key, _, err := env.issueRepo(c.Context, args[0], access.Read)
	if err != nil {
		return err
	}
	var d issues.Detail
	err = env.DB.Read(c.Context, func(tx *sql.Tx) error {
		id, err := issues.Resolve(c.Context, tx, key, args[1])
		if err != nil {
			return err
		}
		env.Note("ISSUE", id)
		d, err = issues.Get(c.Context, tx, key, id, env.clock())
		return err
	})
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
	args, err := Args(c, "repo", "id")
	if err != nil {
		return err
	}
	if !c.IsSet("body") {
		return fault.New(fault.Usage, "usage: issue comment REPO ID --body B: --body is required (- reads stdin)")
	}
	token, fenced, err := leaseToken(c)
	if err != nil {
		return err
	}
	key, _, err := env.issueRepo(c.Context, args[0], access.Read)
	if err != nil {
		return err
	}
	body, err := env.Body(c, "body")
	if err != nil {
		return err
	}
	id, err := issues.Resolve(c.Context, env.DB.R(), key, args[1])
	if err != nil {
		return err
	}
	env.Note("ISSUE", id)
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
	args, err := Args(c, "repo", "id")
	if err != nil {
		return err
	}
	token, _, err := leaseToken(c)
	if err != nil {
		return err
	}
	key, lvl, err := env.issueRepo(c.Context, args[0], access.Read)
	if err != nil {
		return err
	}
	id, err := issues.Resolve(c.Context, env.DB.R(), key, args[1])
	if err != nil {
		return err
	}
	env.Note("ISSUE", id)
	var is issues.Issue
	var changed bool
	err = env.DB.Write(c.Context, func(tx *sql.Tx) error {
		is, changed, err = issues.Change(c.Context, tx, key, id, issues.Edit{
			Principal: env.Principal, Level: lvl, State: &state, LeaseToken: token,
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
