package verbs

// The review gate's verbs: branch protect|unprotect|list, patch submit and
// patch check (CONTRACT.md "SSH verbs").

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/submit"
	"github.com/collab-forge/collab/internal/text"
)

// BranchCommand is the branch verb; the admin command (collab-hook branch)
// runs the same one as the forge's operator.
func BranchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "branch",
		Usage: "branch rules: protect a branch so that it moves only through patch submit",
		Subcommands: []*cli.Command{
			{
				Name:      "protect",
				Usage:     "protect a branch, or replace its rule (repository admin)",
				ArgsUsage: "REPO BRANCH [--approvals N] [--check NAME]… [--strategy merge|ff-only|rebase|squash] [--direct-push none|admin] [--resolved]",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "approvals", Value: 1, Usage: "approvals a submit needs, from writers other than the author and the pusher"},
					&cli.StringSliceFlag{Name: "check", Usage: "a check that must be success (repeatable)"},
					&cli.StringFlag{Name: "strategy", Value: branches.Merge, Usage: "how patch submit merges by default"},
					&cli.StringFlag{Name: "direct-push", Value: branches.DirectNone, Usage: "none, or admin: a repository admin may still fast-forward it"},
					&cli.BoolFlag{Name: "resolved", Usage: "submit needs every inline thread resolved"},
					JSONFlag,
				},
				Action: env.branchProtect,
			},
			{
				Name:      "unprotect",
				Usage:     "remove a branch's rule (repository admin)",
				ArgsUsage: "REPO BRANCH",
				Flags:     []cli.Flag{JSONFlag},
				Action:    env.branchUnprotect,
			},
			{
				Name:      "list",
				Usage:     "the repository's branch rules",
				ArgsUsage: "REPO",
				Flags:     []cli.Flag{JSONFlag},
				Action:    env.branchList,
			},
		},
	}
}

func (env *Env) branchProtect(c *cli.Context) error {
	args, err := Args(c, "repo", "branch")
	if err != nil {
		return err
	}
	n := c.Int("approvals")
	in := ops.ProtectBranch{Repo: args[0], Branch: args[1], Approvals: &n, Checks: c.StringSlice("check"),
		Strategy: c.String("strategy"), DirectPush: c.String("direct-push"), Resolved: c.Bool("resolved")}
	if in.Checks == nil {
		in.Checks = []string{}
	}
	r, err := env.Ops().ProtectBranch(c.Context, env.actor(), in)
	if err != nil {
		return err
	}
	return env.Print(c, r, func(w io.Writer) {
		fmt.Fprintf(w, "branch %s protected: %s\n", r.Branch, ops.RuleLine(r))
	})
}

func (env *Env) branchUnprotect(c *cli.Context) error {
	args, err := Args(c, "repo", "branch")
	if err != nil {
		return err
	}
	r, err := env.Ops().UnprotectBranch(c.Context, env.actor(), args[0], args[1])
	if err != nil {
		return err
	}
	return env.Print(c, r, func(w io.Writer) { fmt.Fprintf(w, "branch %s unprotected\n", r.Branch) })
}

func (env *Env) branchList(c *cli.Context) error {
	repo, err := repoArg(c)
	if err != nil {
		return err
	}
	rules, err := env.Ops().ListBranchRules(c.Context, env.actor(), repo)
	if err != nil {
		return err
	}
	return env.Print(c, rules, func(w io.Writer) {
		if len(rules) == 0 {
			fmt.Fprintln(w, "no protected branches")
		}
		for _, r := range rules {
			fmt.Fprintf(w, "%s  %s\n", r.Branch, ops.RuleLine(r))
		}
	})
}

// gateSubcommands are patch submit and patch check.
func gateSubcommands(env *Env) []*cli.Command {
	return []*cli.Command{
		{
			Name:      "submit",
			Usage:     "merge the latest revision into its base branch, if every submit requirement holds",
			ArgsUsage: "REPO ID [--strategy merge|ff-only|rebase|squash] [--chain] [--lease-token N|ISSUE:N]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "strategy", Usage: "how to merge (default: the branch rule's, else merge)"},
				&cli.BoolFlag{Name: "chain", Usage: "submit the patch's open ancestors in its stack with it, bottom up, in one move of the branch"},
				&cli.StringFlag{Name: "lease-token", Usage: "fencing token: N when the patch links one issue, else ISSUE:N"},
				JSONFlag,
			},
			Action: env.patchSubmit,
		},
		{
			Name:      "check",
			Usage:     "report a check result (CI, a bot, a linter) on a revision",
			ArgsUsage: "REPO ID NAME --state pending|running|success|failure|error|skipped [--revision N] [--url U] [--summary S]",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "state", Usage: strings.Join(checks.States, ", ")},
				&cli.IntFlag{Name: "revision", Usage: "the revision", DefaultText: "the latest"},
				&cli.StringFlag{Name: "url", Usage: "where the details are"},
				&cli.StringFlag{Name: "summary", Usage: "one line about the result; - reads stdin"},
				JSONFlag,
			},
			Action: env.patchCheck,
		},
	}
}

func (env *Env) patchSubmit(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	if c.IsSet("strategy") && c.String("strategy") == "" {
		return fault.New(fault.Usage, "bad strategy \"\": want %s", strings.Join(branches.Strategies, ", "))
	}
	out, err := env.Ops().Submit(c.Context, env.actor(), ops.Submit{Patch: r, Strategy: c.String("strategy"), LeaseToken: c.String("lease-token"), Chain: c.Bool("chain")})
	if err != nil {
		return err
	}
	p := out.Patch
	return env.Print(c, p, func(w io.Writer) {
		// "as" names merge.commit, the commit that carries the patch;
		// where the branch went (a merge commit) is merge.branch_tip.
		strategy, commit := "", out.Commit
		if m := p.Merge; m != nil {
			strategy, commit = m.Strategy, m.Commit
		}
		already := ""
		if out.Already {
			already = "already "
		}
		fmt.Fprintf(w, "patch %s %smerged into %s as %s (%s, submitted by %s)\n", p.ID, already, p.Base, commit, strategy, env.Principal)
		if out.Commit != commit {
			fmt.Fprintf(w, "%s is now at %s\n", p.Base, out.Commit)
		}
		// As a push that merges says it (ops.Push.Scan).
		for _, is := range out.Closed {
			if u := env.issueURL(p.Repo, is); u != "" {
				fmt.Fprintf(w, "closed issue %s: %s\n", is, u)
			} else {
				fmt.Fprintf(w, "closed issue %s\n", is)
			}
		}
	})
}

func (env *Env) patchCheck(c *cli.Context) error {
	args, err := Args(c, "repo", "id", "name")
	if err != nil {
		return err
	}
	if !c.IsSet("state") {
		return fault.New(fault.Usage, "patch check needs --state (%s)", strings.Join(checks.States, ", "))
	}
	rev, err := numbered(c, "revision")
	if err != nil {
		return err
	}
	summary, err := env.Body(c, "summary")
	if err != nil {
		return err
	}
	ck, err := env.Ops().PostCheck(c.Context, env.actor(), ops.PostCheck{
		Patch: ops.Ref{Repo: args[0], ID: args[1]}, Name: args[2], Revision: rev,
		State: c.String("state"), URL: c.String("url"), Summary: summary,
	})
	if err != nil {
		return err
	}
	return env.Print(c, ck, func(w io.Writer) {
		fmt.Fprintf(w, "check %s on revision %d: %s\n", ck.Name, ck.Revision, ck.State)
	})
}

// printSubmit writes a patch's submit requirements for patch show.
func printSubmit(w io.Writer, st *submit.Status) {
	if st == nil {
		return
	}
	verdict := "not submittable"
	if st.Submittable {
		verdict = "submittable"
	}
	fmt.Fprintf(w, "\nsubmit (%s): %s\n", st.Strategy, verdict)
	for _, r := range st.Requirements {
		mark := "✗"
		if r.OK {
			mark = "✓"
		}
		// A detail may quote a conflicting path or a check's name: one
		// line each, whatever they hold.
		fmt.Fprintf(w, "  %s %s: %s\n", mark, r.Name, text.Show(r.Detail))
	}
}

// printChecks writes a revision's checks for patch show, one line each: a
// summary's newlines and controls are shown escaped (text.Show), so that a
// check cannot forge the lines below it.
func printChecks(w io.Writer, cs []checks.Check) {
	for _, ck := range cs {
		line := fmt.Sprintf("     check %s: %s by %s", ck.Name, ck.State, ck.By)
		if ck.Summary != "" {
			line += " — " + text.Show(ck.Summary)
		}
		if ck.URL != "" {
			line += " " + text.Show(ck.URL)
		}
		fmt.Fprintln(w, line)
	}
}
