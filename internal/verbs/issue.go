package verbs

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/ops"
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
				ArgsUsage: "REPO [--state open|closed|all] [--label L]… [--limit N] [--after ID]",
				Flags:     append(listFlags("issue", string(issues.Open), "open, closed or all"), labelFlag("only issues carrying this label (repeatable: all must match)")),
				Action:    env.issueList,
			},
			{
				Name:      "show",
				Usage:     "an issue with its comments, lease and linked patches",
				ArgsUsage: "REPO ID [--limit N] [--after COMMENT]",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many comments (1 to 1000; a page also stops past 4 MiB of them)"},
					&cli.StringFlag{Name: "after", Usage: "start after this comment (for the next page)"},
					JSONFlag,
				},
				Action: env.issueShow,
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
			{
				Name:      "edit",
				Usage:     "change an issue's title or body (its author or a writer)",
				ArgsUsage: "REPO ID [--title T] [--body B]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "title", Usage: "one-line title"},
					&cli.StringFlag{Name: "body", Usage: "markdown body; - reads stdin"},
					JSONFlag,
				},
				Action: env.issueEdit,
			},
			{
				Name:      "claim",
				Usage:     "assign the issue to yourself: lease acquire with no TTL, under the original design's name",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    env.issueClaim,
			},
			{
				Name:      "unclaim",
				Usage:     "give the issue back: lease release; prints released or not held",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    env.leaseRelease,
			},
			issueLabelCommand(env),
			issueLinkCommand(env),
			issueUnlinkCommand(env),
		},
	}
}

// issueClaim is a human's assignment: an open-ended lease, held until
// released (issue unclaim) or taken over by an admin.
func (env *Env) issueClaim(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	l, err := env.Ops().AcquireLease(c.Context, env.actor(), ops.Acquire{Issue: r})
	if err != nil {
		return err
	}
	return env.Print(c, l, func(w io.Writer) { fmt.Fprintf(w, "issue %s: %s\n", l.IssueID, leaseText(l)) })
}

func leaseTokenFlag() cli.Flag {
	return &cli.Int64Flag{Name: "lease-token", Usage: "fencing token of your lease on the issue; the write is refused unless it is current"}
}

// leaseToken returns the --lease-token value, 0 when not given.
func leaseToken(c *cli.Context) (int64, error) {
	if !c.IsSet("lease-token") {
		return 0, nil
	}
	n := c.Int64("lease-token")
	if n <= 0 {
		return 0, fault.New(fault.Usage, "bad lease token %d: want a positive integer", n)
	}
	return n, nil
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
	repo, err := repoArg(c)
	if err != nil {
		return err
	}
	body, err := env.Body(c, "body")
	if err != nil {
		return err
	}
	is, err := env.Ops().FileIssue(c.Context, env.actor(), ops.FileIssue{Repo: repo, Title: c.String("title"), Body: body})
	if err != nil {
		return err
	}
	env.tell(is.Unresolved)
	return env.Print(c, is, func(w io.Writer) {
		fmt.Fprintf(w, "issue %s filed\n", is.ID)
		if u := env.issueURL(is.Repo, is.ID); u != "" {
			fmt.Fprintln(w, u)
		}
	})
}

func (env *Env) issueList(c *cli.Context) error {
	repo, err := repoArg(c)
	if err != nil {
		return err
	}
	page, err := env.Ops().ListIssues(c.Context, env.actor(), ops.ListIssues{
		Repo: repo, State: c.String("state"), Limit: c.Int("limit"), After: c.String("after"),
		Labels: c.StringSlice("label"),
	})
	if err != nil {
		return err
	}
	list := page.Issues
	return env.Print(c, list, func(w io.Writer) {
		for _, is := range list {
			lease := ""
			if is.Lease != nil {
				lease = " [leased by " + is.Lease.Holder + "]"
			}
			ls := ""
			if len(is.Labels) > 0 {
				ls = " · " + labelsText(is.Labels)
			}
			fmt.Fprintf(w, "%s %-6s %s%s%s\n", is.ID, is.State, is.Title, ls, lease)
		}
	})
}

func (env *Env) issueShow(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	d, err := env.Ops().ShowIssue(c.Context, env.actor(), ops.ShowIssue{Issue: r, After: c.String("after"), Limit: c.Int("limit")})
	if err != nil {
		return err
	}
	return env.Print(c, d, func(w io.Writer) {
		env.printIssue(w, d.Detail)
		if d.CommentsNext != nil {
			fmt.Fprintf(w, "\nmore comments follow: issue show %s %s --after %s\n", reponame.Display(d.Repo), d.ID, *d.CommentsNext)
		}
	})
}

func (env *Env) printIssue(w io.Writer, d issues.Detail) {
	fmt.Fprintf(w, "issue %s: %s\n", d.ID, d.Title)
	fmt.Fprintf(w, "state %s · filed by %s at %s\n", d.State, d.Byline(d.Author), d.CreatedAt)
	if len(d.Labels) > 0 {
		fmt.Fprintf(w, "labels: %s\n", labelsText(d.Labels))
	}
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
			end = *t.EndReason + " at " + t.EndedAt.String()
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
	for _, l := range d.Links {
		fmt.Fprintf(w, "link: %s#%s (%s) %s\n", l.Kind+" "+reponame.Display(l.Repo), l.ID, l.State, l.Title)
	}
	for _, m := range d.MentionedIn {
		fmt.Fprintf(w, "mentioned in %s %s#%s: %s\n", m.Kind, reponame.Display(m.Repo), m.ID, m.Title)
	}
	if d.Body != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(d.Body, "\n"))
	}
	for _, cm := range d.Comments {
		fmt.Fprintf(w, "\n--- comment %s by %s at %s\n%s\n", cm.ID, cm.Byline(cm.Author), cm.CreatedAt, strings.TrimRight(cm.Body, "\n"))
	}
}

func leaseText(l leases.Lease) string {
	exp := "open-ended"
	if l.ExpiresAt != nil {
		exp = "expires " + l.ExpiresAt.String()
	}
	return fmt.Sprintf("held by %s, token %d, %s", l.Holder, l.Token, exp)
}

func (env *Env) issueComment(c *cli.Context) error {
	if !c.IsSet("body") {
		return fault.New(fault.Usage, "usage: issue comment REPO ID --body B: --body is required (- reads stdin)")
	}
	token, err := leaseToken(c)
	if err != nil {
		return err
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	body, err := env.Body(c, "body")
	if err != nil {
		return err
	}
	cm, err := env.Ops().Comment(c.Context, env.actor(), ops.Comment{Issue: r, Body: body, LeaseToken: token})
	if err != nil {
		return err
	}
	env.tell(cm.Unresolved)
	return env.Print(c, cm, func(w io.Writer) { fmt.Fprintf(w, "comment %s on issue %s\n", cm.ID, cm.IssueID) })
}

// issueSetState closes or reopens an issue.
func (env *Env) issueSetState(c *cli.Context, state issues.State) error {
	token, err := leaseToken(c)
	if err != nil {
		return err
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	is, changed, err := env.Ops().EditIssue(c.Context, env.actor(), ops.EditIssue{Issue: r, State: &state, LeaseToken: token})
	if err != nil {
		return err
	}
	return env.Print(c, is, func(w io.Writer) {
		if !changed {
			fmt.Fprintf(w, "issue %s was already %s\n", is.ID, state)
			return
		}
		fmt.Fprintf(w, "issue %s %s\n", is.ID, map[issues.State]string{issues.Closed: "closed", issues.Open: "reopened"}[state])
	})
}

func (env *Env) issueEdit(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	in := ops.EditIssue{Issue: r}
	if c.IsSet("title") {
		t := c.String("title")
		in.Title = &t
	}
	if c.IsSet("body") {
		b, err := env.Body(c, "body")
		if err != nil {
			return err
		}
		in.Body = &b
	}
	if in.Title == nil && in.Body == nil {
		return fault.New(fault.Usage, "usage: issue edit REPO ID [--title T] [--body B]: give at least one")
	}
	is, changed, err := env.Ops().EditIssue(c.Context, env.actor(), in)
	if err != nil {
		return err
	}
	return env.Print(c, is, func(w io.Writer) {
		if !changed {
			fmt.Fprintf(w, "issue %s unchanged\n", is.ID)
			return
		}
		fmt.Fprintf(w, "issue %s edited\n", is.ID)
	})
}
