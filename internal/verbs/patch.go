package verbs

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/review"
)

func patchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "patch",
		Usage: "patches: revisions, diffs, reviews, inline comments",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list patches, newest first",
				ArgsUsage: "REPO [--state open|merged|closed|all] [--limit N] [--after ID]",
				Flags:     listFlags("patch", patches.Open, "open, merged, closed or all"),
				Action:    env.patchList,
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
					&cli.IntFlag{Name: "revision", Usage: "the revision (default: the latest)"},
					&cli.IntFlag{Name: "from", Usage: "show what the author changed since this revision"},
					JSONFlag,
				},
				Action: env.patchDiff,
			},
			{
				Name:      "review",
				Usage:     "review a revision, or comment inline on one of its files",
				ArgsUsage: "REPO ID (--approve|--request-changes|--comment) [--revision N] [--file PATH [--line L]] --body B|- [--lease-token N|ISSUE:N]",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "approve", Usage: "vote to approve (needs write access)"},
					&cli.BoolFlag{Name: "request-changes", Usage: "vote against until changed (needs write access)"},
					&cli.BoolFlag{Name: "comment", Usage: "comment without a vote"},
					&cli.IntFlag{Name: "revision", Usage: "the revision reviewed (default: the latest)"},
					&cli.StringFlag{Name: "file", Usage: "anchor the comment to this file of the revision"},
					&cli.IntFlag{Name: "line", Usage: "and to this line of it (from 1)"},
					&cli.StringFlag{Name: "body", Usage: "markdown body; - reads stdin"},
					&cli.StringFlag{Name: "lease-token", Usage: "fencing token: N when the patch links one issue, else ISSUE:N"},
					JSONFlag,
				},
				Action: env.patchReview,
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
				ArgsUsage: "REPO ID --commit OID",
				Flags: []cli.Flag{
					// Checked in the action: urfave's own "Required flag" error is
					// not a fault, so it would exit 1 instead of 2.
					&cli.StringFlag{Name: "commit", Usage: "the merged commit; must be reachable from the target branch"},
					JSONFlag,
				},
				Action: env.patchMerge,
			},
		},
	}
}

// diffJSON is what patch diff --json prints.
type diffJSON struct {
	PatchID  string `json:"patch_id"`
	Revision int    `json:"revision"`
	// From is the revision the interdiff starts at, null for a plain diff.
	From   *int   `json:"from"`
	Base   string `json:"base_commit"`
	Commit string `json:"commit"`
	diff.Result
}

func (env *Env) patchURL(key, id string) string {
	if env.URL == "" {
		return ""
	}
	return env.URL + "/" + reponame.Display(key) + "/-/patches/" + id
}

func (env *Env) patchView(p patches.Patch) review.Listed {
	return review.Listed{Patch: review.Describe(p), URL: env.patchURL(p.Repo, p.ID)}
}

// logPatch records a change made to a patch, with the journal's fields.
func (env *Env) logPatch(ctx context.Context, msg, key, id string, args ...any) {
	if env.Log == nil {
		return
	}
	// REPO comes from serve's logger, which names it for every verb line.
	env.Log.InfoContext(ctx, msg, append([]any{"PATCH", id, "OUTCOME", "ok"}, args...)...)
}

func (env *Env) repoDir(key string) (string, error) {
	return reponame.Dir(env.Root.ReposDir(), key)
}

func (env *Env) patchList(c *cli.Context) error {
	if err := patches.CheckState(c.String("state")); err != nil {
		return err
	}
	if err := checkLimit(c); err != nil {
		return err
	}
	key, err := env.repoArg(c, access.Read)
	if err != nil {
		return err
	}
	var out []review.Listed
	err = env.DB.Read(c.Context, func(tx *sql.Tx) error {
		list, err := patches.List(c.Context, tx, key, strings.ToLower(c.String("state")), c.Int("limit"), c.String("after"))
		if err != nil {
			return err
		}
		out = make([]review.Listed, 0, len(list))
		for _, p := range list {
			if p.Reviews, err = patches.Reviews(c.Context, tx, key, p.ID); err != nil {
				return err
			}
			out = append(out, env.patchView(p))
		}
		return nil
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
	t, err := env.patchTarget(c, access.Read)
	if err != nil {
		return err
	}
	var out review.Shown
	err = env.DB.Read(c.Context, func(tx *sql.Tx) error {
		p, err := patches.Get(c.Context, tx, t.key, t.id)
		if err != nil {
			return err
		}
		tl, err := review.Timeline(c.Context, tx, p)
		if err != nil {
			return err
		}
		out = review.Shown{Listed: env.patchView(p), Timeline: tl}
		return nil
	})
	if err != nil {
		return err
	}
	return env.Print(c, out, func(w io.Writer) { printPatch(w, out) })
}

func printPatch(w io.Writer, p review.Shown) {
	fmt.Fprintf(w, "patch %s: %s\n", p.ID, p.Title)
	draft := ""
	if p.Draft {
		draft = " · draft"
	}
	fmt.Fprintf(w, "state %s%s · author %s · target %s · %d revision%s\n", p.State, draft, p.Author, p.Base, len(p.Revisions), plural(len(p.Revisions)))
	if p.Topic != "" {
		fmt.Fprintf(w, "topic: %s\n", p.Topic)
	}
	if p.URL != "" {
		fmt.Fprintln(w, p.URL)
	}
	if len(p.Issues) > 0 {
		fmt.Fprintf(w, "fixes: %s\n", strings.Join(p.Issues, " "))
	}
	if m := p.Merge; m != nil {
		fmt.Fprintf(w, "merged: %s on %s by %s at %s\n", m.Commit, m.Branch, m.By, m.At)
	}
	fmt.Fprintf(w, "review: %s\n", p.Summary)
	for _, v := range p.Summary.Stale {
		fmt.Fprintf(w, "  stale: %s %s on revision %d\n", v.Author, v.Verdict, v.Revision)
	}
	if d := strings.TrimSpace(p.Description); d != "" {
		fmt.Fprintf(w, "\n%s\n", d)
	}
	fmt.Fprintln(w, "\nrevisions:")
	for _, r := range p.Revisions {
		fmt.Fprintf(w, "  %d  base %s  commit %s  pushed by %s at %s\n", r.Number, r.BaseCommit, r.Commit, r.Pusher, r.CreatedAt)
	}
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
			fmt.Fprintf(w, "  %s %s on revision %d at %s%s\n", v.Author, verdictText(v.Verdict), v.Revision, v.CreatedAt, olderNote(v))
			printBody(w, v.Body)
		}
	}
	if len(inline) > 0 {
		fmt.Fprintln(w, "\ninline comments:")
		for _, v := range inline {
			fmt.Fprintf(w, "  %s on revision %d by %s at %s%s\n", v.Anchor(), v.Revision, v.Author, v.CreatedAt, olderNote(v))
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

func (env *Env) patchDiff(c *cli.Context) error {
	if c.IsSet("revision") && c.Int("revision") < 1 {
		return fault.New(fault.Usage, "bad revision %d: revisions are numbered from 1", c.Int("revision"))
	}
	if c.IsSet("from") && c.Int("from") < 1 {
		return fault.New(fault.Usage, "bad revision %d: revisions are numbered from 1", c.Int("from"))
	}
	t, err := env.patchTarget(c, access.Read)
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	revs, err := patches.Revisions(c.Context, env.DB.R(), key, id)
	if err != nil {
		return err
	}
	pick := func(n int) (patches.Revision, error) {
		if n == 0 && len(revs) > 0 {
			return revs[len(revs)-1], nil
		}
		for _, r := range revs {
			if r.Number == n {
				return r, nil
			}
		}
		if n == 0 {
			return patches.Revision{}, fault.New(fault.NotFound, "patch %s has no revisions", id)
		}
		return patches.Revision{}, fault.New(fault.NotFound, "patch %s has no revision %d (it has %d)", id, n, len(revs))
	}
	to, err := pick(c.Int("revision"))
	if err != nil {
		return err
	}
	dir, err := env.repoDir(key)
	if err != nil {
		return err
	}
	out := diffJSON{PatchID: id, Revision: to.Number, Base: to.BaseCommit, Commit: to.Commit}
	toRange := diff.Range{Base: to.BaseCommit, Commit: to.Commit}
	if c.IsSet("from") {
		from, err := pick(c.Int("from"))
		if err != nil {
			return err
		}
		n := from.Number
		out.From = &n
		out.Result, err = diff.Interdiff(c.Context, dir, diff.Range{Base: from.BaseCommit, Commit: from.Commit}, toRange, diff.DefaultLimits())
		if err != nil {
			return fmt.Errorf("interdiff %d→%d of %s: %w", from.Number, to.Number, id, err)
		}
	} else {
		out.Result, err = diff.Revision(c.Context, dir, toRange, diff.DefaultLimits())
		if err != nil {
			return fmt.Errorf("diff of revision %d of %s: %w", to.Number, id, err)
		}
	}
	if out.Notes == nil {
		out.Notes = []string{}
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
	if c.IsSet("revision") && c.Int("revision") < 1 {
		return fault.New(fault.Usage, "bad revision %d: revisions are numbered from 1", c.Int("revision"))
	}
	if c.IsSet("line") && c.Int("line") < 1 {
		return fault.New(fault.Usage, "bad line %d: lines are numbered from 1", c.Int("line"))
	}
	t, err := env.patchTarget(c, review.Need(verdicts[0]))
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	body, err := env.Body(c, "body")
	if err != nil {
		return err
	}
	dir, err := env.repoDir(key)
	if err != nil {
		return err
	}
	r, err := review.Post(c.Context, env.DB, dir, review.Input{
		Repo: key, PatchID: id, Author: env.Principal, Verdict: verdicts[0], Body: body,
		Revision: c.Int("revision"), File: c.String("file"), Line: c.Int("line"),
		LeaseToken: c.String("lease-token"),
	}, env.clock())
	if err != nil {
		return err
	}
	env.logPatch(c.Context, "review posted", key, id, "review", r.ID, "verdict", r.Verdict, "revision", r.Revision)
	revs, err := patches.Revisions(c.Context, env.DB.R(), key, id)
	if err != nil {
		return err
	}
	v := review.Views([]patches.Review{r}, revs[len(revs)-1].Number)[0]
	return env.Print(c, v, func(w io.Writer) {
		what := fmt.Sprintf("%s %s revision %d", env.Principal, verdictText(v.Verdict), v.Revision)
		if v.IsInline() {
			what = fmt.Sprintf("%s commented on %s in revision %d", env.Principal, v.Anchor(), v.Revision)
		}
		fmt.Fprintf(w, "review %s: %s of patch %s%s\n", v.ID, what, id, olderNote(v))
	})
}

func (env *Env) patchSetState(c *cli.Context, state string) error {
	t, err := env.patchTarget(c, access.Write)
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	changed, err := review.SetState(c.Context, env.DB, key, id, state, env.Principal, env.clock())
	if err != nil {
		return err
	}
	env.logPatch(c.Context, "patch state set", key, id, "state", state, "changed", changed)
	p, err := patches.Get(c.Context, env.DB.R(), key, id)
	if err != nil {
		return err
	}
	out := env.patchView(p)
	return env.Print(c, out, func(w io.Writer) {
		if !changed {
			fmt.Fprintf(w, "patch %s was already %s\n", id, state)
			return
		}
		fmt.Fprintf(w, "patch %s %s\n", id, map[string]string{patches.Closed: "closed", patches.Open: "reopened"}[state])
	})
}

func (env *Env) patchMerge(c *cli.Context) error {
	if !c.IsSet("commit") {
		return fault.New(fault.Usage, "--commit is required: the merged commit on the patch's target branch")
	}
	t, err := env.patchTarget(c, access.Write)
	if err != nil {
		return err
	}
	key, id := t.key, t.id
	dir, err := env.repoDir(key)
	if err != nil {
		return err
	}
	m, recorded, err := review.Merge(c.Context, env.DB, dir, key, id, c.String("commit"), env.Principal, env.clock())
	if err != nil {
		return err
	}
	if recorded {
		env.logPatch(c.Context, "merge recorded by hand", key, id, "NEW_OID", m.Commit, "REF", "refs/heads/"+m.Branch)
	}
	p, err := patches.Get(c.Context, env.DB.R(), key, id)
	if err != nil {
		return err
	}
	out := env.patchView(p)
	return env.Print(c, out, func(w io.Writer) {
		if !recorded {
			fmt.Fprintf(w, "patch %s was already merged: %s on %s, recorded by %s\n", id, m.Commit, m.Branch, m.By)
			return
		}
		fmt.Fprintf(w, "patch %s merged: %s on %s, recorded by %s\n", id, m.Commit, m.Branch, m.By)
	})
}
