package verbs

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/text"
)

func patchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "patch",
		Usage: "patches: revisions, diffs, reviews, inline comments",
		Subcommands: append([]*cli.Command{
			{
				Name:      "list",
				Usage:     "list patches, newest first",
				ArgsUsage: "REPO [--state open|merged|closed|all] [--reviewer NAME] [--limit N] [--after ID]",
				Flags: append(listFlags("patch", string(patches.Open), "open, merged, closed or all"),
					&cli.StringFlag{Name: "reviewer", Usage: "only patches that ask NAME to review them"}),
				Action: env.patchList,
			},
			{
				Name:      "show",
				Usage:     "a patch with its revisions, reviews, inline comments, linked issues, merge and timeline",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    env.patchShow,
			},
			{
				Name:      "diff",
				Usage:     "a revision's diff against its base; with --from M the interdiff M→N",
				ArgsUsage: "REPO ID [--revision N] [--from M]",
				Flags: []cli.Flag{
					&cli.IntFlag{Name: "revision", Usage: "the revision", DefaultText: "the latest"},
					&cli.IntFlag{Name: "from", Usage: "show what the author changed since this revision"},
					JSONFlag,
				},
				Action: env.patchDiff,
			},
			{
				Name:      "review",
				Usage:     "review a revision, or comment inline on one of its files",
				ArgsUsage: "REPO ID (--approve|--request-changes|--comment) [--revision N] [--file PATH [--line L] [--side old|new]] [--reply COMMENT] --body B|- [--draft] [--lease-token N|ISSUE:N]",
				Flags: append(verdictFlags(),
					&cli.IntFlag{Name: "revision", Usage: "the revision reviewed", DefaultText: "the latest"},
					&cli.StringFlag{Name: "file", Usage: "anchor the comment to this file of the revision"},
					&cli.IntFlag{Name: "line", Usage: "and to this line of it (from 1)"},
					&cli.StringFlag{Name: "side", Usage: "new (the revision's file, the default) or old (its base's)"},
					&cli.StringFlag{Name: "reply", Usage: "answer the inline thread of this comment (id or prefix)"},
					&cli.StringFlag{Name: "body", Usage: "markdown body; - reads stdin"},
					&cli.BoolFlag{Name: "draft", Usage: "keep it a draft, seen only by you, until patch publish"},
					&cli.StringFlag{Name: "lease-token", Usage: "fencing token: N when the patch links one issue, else ISSUE:N"},
					JSONFlag,
				),
				Action: env.patchReview,
			},
			{
				Name:      "publish",
				Usage:     "post your drafts on a patch, with a verdict and a message, as one review",
				ArgsUsage: "REPO ID [--approve|--request-changes|--comment] [--body B|-]",
				Flags: append(verdictFlags(),
					&cli.StringFlag{Name: "body", Usage: "markdown message; - reads stdin"},
					JSONFlag,
				),
				Action: env.patchPublish,
			},
			{
				Name:      "resolve",
				Usage:     "mark an inline thread resolved (its author or a writer)",
				ArgsUsage: "REPO ID COMMENT [--unresolve]",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "unresolve", Usage: "open the thread again"},
					JSONFlag,
				},
				Action: env.patchResolve,
			},
			{
				Name:      "close",
				Usage:     "close (abandon) a patch",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    func(c *cli.Context) error { return env.patchSetState(c, patches.Closed) },
			},
			{
				Name:      "reopen",
				Usage:     "reopen a closed patch",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    func(c *cli.Context) error { return env.patchSetState(c, patches.Open) },
			},
			{
				Name:      "merge",
				Usage:     "record by hand that a patch was merged as a commit on its target branch",
				ArgsUsage: "REPO ID --commit OID [--lease-token N|ISSUE:N]",
				Flags: []cli.Flag{
					// Checked in the action: urfave's own "Required flag" error is
					// not a fault, so it would exit 1 instead of 2.
					&cli.StringFlag{Name: "commit", Usage: "the merged commit; must be reachable from the target branch"},
					&cli.StringFlag{Name: "lease-token", Usage: "fencing token: N when the patch links one issue, else ISSUE:N"},
					JSONFlag,
				},
				Action: env.patchMerge,
			},
			{
				Name:      "edit",
				Usage:     "change a patch's title or description (its author or a writer)",
				ArgsUsage: "REPO ID [--title T] [--description D]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "title", Usage: "one-line title"},
					&cli.StringFlag{Name: "description", Usage: "markdown; - reads stdin"},
					JSONFlag,
				},
				Action: env.patchEdit,
			},
			{
				Name:      "ready",
				Usage:     "mark a draft ready for review",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    func(c *cli.Context) error { return env.patchDraft(c, false) },
			},
			{
				Name:      "wip",
				Usage:     "mark a patch a draft (work in progress) again",
				ArgsUsage: "REPO ID",
				Flags:     []cli.Flag{JSONFlag},
				Action:    func(c *cli.Context) error { return env.patchDraft(c, true) },
			},
			{
				Name:      "reviewers",
				Usage:     "ask principals to review a patch, or take them off (as a push's %r= asks)",
				ArgsUsage: "REPO ID [--add NAME]… [--remove NAME]…",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "add", Usage: "a principal (or the e-mail address the operator gave one) to ask"},
					&cli.StringSliceFlag{Name: "remove", Usage: "a principal to take off"},
					JSONFlag,
				},
				Action: env.patchReviewers,
			},
		}, gateSubcommands(env)...),
	}
}

func (env *Env) patchList(c *cli.Context) error {
	repo, err := repoArg(c)
	if err != nil {
		return err
	}
	out, err := env.Ops().ListPatches(c.Context, env.actor(), ops.ListPatches{
		Repo: repo, State: c.String("state"), Limit: c.Int("limit"), After: c.String("after"), Reviewer: c.String("reviewer"),
	})
	if err != nil {
		return err
	}
	return env.Print(c, out, func(w io.Writer) {
		for _, p := range out {
			fmt.Fprintf(w, "%s %-6s rev %d  %s -> %s  [%s]  %s\n",
				p.ID, p.State, len(p.Revisions), p.Author, p.Base, p.Summary, p.Title)
		}
	})
}

func (env *Env) patchShow(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	out, err := env.Ops().ShowPatch(c.Context, env.actor(), r)
	if err != nil {
		return err
	}
	return env.Print(c, out, func(w io.Writer) {
		printPatch(w, out, forge.CloneURL(env.SSH, out.Repo), forge.HTTPCloneURL(env.URL, out.Repo))
	})
}

// printPatch prints p; sshURL and httpURL are its repository's, where
// known (origin is either, for the fetch line).
func printPatch(w io.Writer, p review.Shown, sshURL, httpURL string) {
	fmt.Fprintf(w, "patch %s: %s\n", p.ID, p.Title)
	draft := ""
	if p.Draft {
		draft = " · draft"
	}
	fmt.Fprintf(w, "state %s%s · author %s · target %s · %d revision%s\n", p.State, draft, p.Author, p.Base, len(p.Revisions), plural(len(p.Revisions)))
	if p.Topic != "" {
		fmt.Fprintf(w, "topic: %s\n", p.Topic)
	}
	if len(p.Reviewers) > 0 {
		fmt.Fprintf(w, "reviewers: %s\n", strings.Join(p.Reviewers, ", "))
	}
	if len(p.Hashtags) > 0 {
		fmt.Fprintf(w, "hashtags: #%s\n", strings.Join(p.Hashtags, " #"))
	}
	if p.URL != "" {
		fmt.Fprintln(w, p.URL)
	}
	if len(p.Issues) > 0 {
		fmt.Fprintf(w, "fixes: %s\n", strings.Join(p.Issues, " "))
	}
	for _, r := range p.Parents {
		fmt.Fprintf(w, "parent: %s (%s) %s\n", r.ID, r.State, r.Title)
	}
	for _, r := range p.Children {
		fmt.Fprintf(w, "child: %s (%s) %s\n", r.ID, r.State, r.Title)
	}
	if m := p.Merge; m != nil {
		how := m.Strategy
		if m.Submitted {
			how = "submitted, " + how
		}
		fmt.Fprintf(w, "merged: %s on %s by %s at %s (%s)\n", m.Commit, m.Branch, m.By, m.At, how)
	}
	fmt.Fprintf(w, "review: %s\n", p.Summary)
	for _, v := range p.Summary.Stale {
		fmt.Fprintf(w, "  stale: %s %s on revision %d\n", v.Author, v.Verdict, v.Revision)
	}
	if d := strings.TrimSpace(p.Description); d != "" {
		fmt.Fprintf(w, "\n%s\n", d)
	}
	var remotes []string
	for _, u := range []string{sshURL, httpURL} {
		if u != "" {
			remotes = append(remotes, u)
		}
	}
	if len(remotes) > 0 {
		fmt.Fprintf(w, "\nrepository: %s\n", strings.Join(remotes, " or "))
	}
	fmt.Fprintf(w, "\nrevisions (fetch them: %s):\n", collabref.FetchLine(p.ID))
	for _, r := range p.Revisions {
		fmt.Fprintf(w, "  %d  base %s  commit %s  pushed by %s at %s\n", r.Number, r.BaseCommit, r.Commit, r.Pusher, r.CreatedAt)
		if r.Message != "" {
			fmt.Fprintf(w, "     %s\n", text.Line(r.Message))
		}
		printChecks(w, r.Checks)
	}
	printSubmit(w, p.Submit)
	var general, inline []review.View
	for _, v := range p.Reviews {
		if v.IsInline() {
			inline = append(inline, v)
		} else {
			general = append(general, v)
		}
	}
	if len(general) > 0 {
		fmt.Fprintln(w, "\nreviews:")
		for _, v := range general {
			fmt.Fprintf(w, "  %s %s on revision %d at %s%s\n", v.Byline(v.Author), verdictText(v.Verdict), v.Revision, v.CreatedAt, olderNote(v))
			printBody(w, v.Body)
		}
	}
	if len(inline) > 0 {
		fmt.Fprintln(w, "\ninline comments:")
		for _, v := range inline {
			fmt.Fprintf(w, "  %s on revision %d by %s at %s%s\n", v.Anchor(), v.Revision, v.Byline(v.Author), v.CreatedAt, olderNote(v))
			printBody(w, v.Body)
		}
	}
	fmt.Fprintln(w, "\ntimeline:")
	for _, e := range p.Timeline {
		fmt.Fprintf(w, "  %s  %s\n", e.At, entryText(e))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func olderNote(v review.View) string {
	if v.Outdated {
		return " (on an older revision)"
	}
	return ""
}

func printBody(w io.Writer, body string) {
	if body == "" {
		return
	}
	for _, l := range strings.Split(body, "\n") {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

func verdictText(v string) string {
	switch v {
	case review.Approve:
		return "approved"
	case review.RequestChanges:
		return "requested changes"
	default:
		return "commented"
	}
}

func entryText(e review.Entry) string {
	switch e.Kind {
	case review.KindRevision:
		return fmt.Sprintf("revision %d pushed by %s (%s)", e.Revision, e.Actor, e.Commit)
	case review.KindReview:
		return fmt.Sprintf("%s %s revision %d", e.Actor, map[string]string{review.Approve: "approved", review.RequestChanges: "requested changes on"}[e.Review.Verdict], e.Revision)
	case review.KindComment:
		if e.Review != nil && e.Review.IsInline() {
			return fmt.Sprintf("%s commented on %s in revision %d%s", e.Actor, e.Review.Anchor(), e.Revision, olderNote(*e.Review))
		}
		return fmt.Sprintf("%s commented on revision %d", e.Actor, e.Revision)
	case review.KindMerged:
		if e.Commit != "" {
			return fmt.Sprintf("merged into %s as %s by %s", e.Branch, e.Commit, e.Actor)
		}
		return "merged by " + e.Actor
	default:
		return e.Kind + " by " + e.Actor
	}
}

// numbered reads a revision or line flag: 0 when not given, else a
// number from 1.
func numbered(c *cli.Context, name string) (int, error) {
	if !c.IsSet(name) {
		return 0, nil
	}
	return c.Int(name), ops.CheckNumbered(name, c.Int(name))
}

func (env *Env) patchDiff(c *cli.Context) error {
	rev, err := numbered(c, "revision")
	if err != nil {
		return err
	}
	from, err := numbered(c, "from")
	if err != nil {
		return err
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	out, err := env.Ops().PatchDiff(c.Context, env.actor(), ops.PatchDiff{Patch: r, Revision: rev, From: from})
	if err != nil {
		return err
	}
	return env.Print(c, out, func(w io.Writer) { _ = out.WriteText(w) })
}

func (env *Env) patchReview(c *cli.Context) error {
	var verdicts []string
	for _, v := range []string{review.Approve, review.RequestChanges, review.Comment} {
		if c.Bool(v) {
			verdicts = append(verdicts, v)
		}
	}
	if len(verdicts) != 1 {
		return fault.New(fault.Usage, "give exactly one of --approve, --request-changes or --comment")
	}
	rev, err := numbered(c, "revision")
	if err != nil {
		return err
	}
	line, err := numbered(c, "line")
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
	posted, err := env.Ops().Review(c.Context, env.actor(), ops.Review{
		Patch: r, Verdict: verdicts[0], Body: body,
		Revision: rev, File: c.String("file"), Line: line, Side: c.String("side"),
		Reply: c.String("reply"), Draft: c.Bool("draft"),
		LeaseToken: c.String("lease-token"),
	})
	if err != nil {
		return err
	}
	env.tell(posted.Review.Unresolved)
	v := posted.Review
	return env.Print(c, v, func(w io.Writer) {
		what := fmt.Sprintf("%s %s revision %d", env.Principal, verdictText(v.Verdict), v.Revision)
		if v.IsInline() {
			what = fmt.Sprintf("%s commented on %s in revision %d", env.Principal, v.Anchor(), v.Revision)
		}
		draft := ""
		if v.Draft {
			draft = " (draft: patch publish posts it)"
		}
		fmt.Fprintf(w, "review %s: %s of patch %s%s%s\n", v.ID, what, posted.PatchID, olderNote(v), draft)
	})
}

// verdictFlags are a review's three verdicts, as patch review and patch
// publish take them.
func verdictFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: review.Approve, Usage: "vote to approve (needs write access)"},
		&cli.BoolFlag{Name: review.RequestChanges, Usage: "vote against until changed (needs write access)"},
		&cli.BoolFlag{Name: review.Comment, Usage: "comment without a vote"},
	}
}

func (env *Env) patchPublish(c *cli.Context) error {
	verdict := ""
	for _, v := range []string{review.Approve, review.RequestChanges, review.Comment} {
		if c.Bool(v) {
			if verdict != "" {
				return fault.New(fault.Usage, "give at most one of --approve, --request-changes or --comment")
			}
			verdict = v
		}
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	body, err := env.Body(c, "body")
	if err != nil {
		return err
	}
	out, err := env.Ops().PublishDrafts(c.Context, env.actor(), ops.Publish{Patch: r, Verdict: verdict, Body: body})
	if err != nil {
		return err
	}
	for _, v := range out.Posted {
		env.tell(v.Unresolved)
	}
	return env.Print(c, out.Posted, func(w io.Writer) {
		for _, v := range out.Posted {
			fmt.Fprintf(w, "review %s: %s %s on patch %s\n", v.ID, env.Principal, verdictText(v.Verdict), out.PatchID)
		}
	})
}

func (env *Env) patchResolve(c *cli.Context) error {
	args, err := Args(c, "repo", "id", "comment")
	if err != nil {
		return err
	}
	out, err := env.Ops().ResolveThread(c.Context, env.actor(), ops.Resolve{
		Patch: ops.Ref{Repo: args[0], ID: args[1]}, Comment: args[2], Unresolve: c.Bool("unresolve"),
	})
	if err != nil {
		return err
	}
	return env.Print(c, out, func(w io.Writer) {
		state := "resolved"
		if !out.Resolved {
			state = "unresolved"
		}
		already := ""
		if !out.Changed {
			already = "already "
		}
		fmt.Fprintf(w, "thread %s of patch %s %s%s\n", out.Thread, out.PatchID, already, state)
	})
}

func (env *Env) patchSetState(c *cli.Context, state patches.State) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	ch, err := env.Ops().SetPatchState(c.Context, env.actor(), r, state)
	if err != nil {
		return err
	}
	id := ch.Patch.ID
	return env.Print(c, ch.Patch, func(w io.Writer) {
		if !ch.Changed {
			fmt.Fprintf(w, "patch %s was already %s\n", id, state)
			return
		}
		fmt.Fprintf(w, "patch %s %s\n", id, map[patches.State]string{patches.Closed: "closed", patches.Open: "reopened"}[state])
	})
}

func (env *Env) patchMerge(c *cli.Context) error {
	if !c.IsSet("commit") {
		return fault.New(fault.Usage, "--commit is required: the merged commit on the patch's target branch")
	}
	r, err := ref(c)
	if err != nil {
		return err
	}
	ch, m, err := env.Ops().RecordMerge(c.Context, env.actor(), ops.Merge{Patch: r, Commit: c.String("commit"), LeaseToken: c.String("lease-token")})
	if err != nil {
		return err
	}
	id := ch.Patch.ID
	return env.Print(c, ch.Patch, func(w io.Writer) {
		if !ch.Changed {
			fmt.Fprintf(w, "patch %s was already merged: %s on %s, recorded by %s\n", id, m.Commit, m.Branch, m.By)
			return
		}
		fmt.Fprintf(w, "patch %s merged: %s on %s, recorded by %s\n", id, m.Commit, m.Branch, m.By)
	})
}

func (env *Env) patchEdit(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	in := ops.PatchEdit{Patch: r}
	if c.IsSet("title") {
		t := c.String("title")
		in.Title = &t
	}
	if c.IsSet("description") {
		d, err := env.Body(c, "description")
		if err != nil {
			return err
		}
		in.Description = &d
	}
	if in.Title == nil && in.Description == nil {
		return fault.New(fault.Usage, "usage: patch edit REPO ID [--title T] [--description D]: give at least one")
	}
	return env.printEdit(c, in, "edited")
}

func (env *Env) patchDraft(c *cli.Context, draft bool) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	what := map[bool]string{true: "marked work in progress", false: "marked ready for review"}[draft]
	return env.printEdit(c, ops.PatchEdit{Patch: r, Draft: &draft}, what)
}

func (env *Env) patchReviewers(c *cli.Context) error {
	r, err := ref(c)
	if err != nil {
		return err
	}
	in := ops.PatchEdit{Patch: r, AddReviewers: c.StringSlice("add"), RemoveReviewers: c.StringSlice("remove")}
	if len(in.AddReviewers)+len(in.RemoveReviewers) == 0 {
		// Without a change it lists them.
		out, err := env.Ops().ShowPatch(c.Context, env.actor(), r)
		if err != nil {
			return err
		}
		return env.Print(c, out.Reviewers, func(w io.Writer) {
			for _, n := range out.Reviewers {
				fmt.Fprintln(w, n)
			}
		})
	}
	return env.printEdit(c, in, "reviewers changed")
}

// printEdit runs an edit of a patch and prints the patch, or a line
// saying what happened.
func (env *Env) printEdit(c *cli.Context, in ops.PatchEdit, what string) error {
	ch, err := env.Ops().EditPatch(c.Context, env.actor(), in)
	if err != nil {
		return err
	}
	return env.Print(c, ch.Patch, func(w io.Writer) {
		if !ch.Changed {
			fmt.Fprintf(w, "patch %s unchanged\n", ch.Patch.ID)
			return
		}
		fmt.Fprintf(w, "patch %s %s\n", ch.Patch.ID, what)
		if strings.Contains(what, "reviewers") {
			fmt.Fprintf(w, "reviewers: %s\n", strings.Join(ch.Patch.Reviewers, ", "))
		}
	})
}
