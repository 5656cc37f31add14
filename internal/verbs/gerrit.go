package verbs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/review"
	"github.com/collab-forge/collab/internal/text"
)

// gerrit query: the subset of Gerrit's ssh command that Gerrit's own
// client (git-review -d, -l) runs, with Gerrit's names and output shape:
// one JSON object per change and line, then a stats line.

// gerritQueryLimit is how many changes a query returns without limit:N,
// Gerrit's default.
const gerritQueryLimit = 500

func gerritCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:  "gerrit",
		Usage: "what Gerrit's own client (git-review) asks a Gerrit server",
		Subcommands: []*cli.Command{
			{
				Name:      "query",
				Usage:     "patches as Gerrit changes: one JSON object per line, then {\"type\":\"stats\",\"rowCount\":N}",
				ArgsUsage: "[--format=JSON] [--current-patch-set] [--patch-sets] [--dependencies] TERM… (project:NAME, status:open|merged|abandoned, change:ID, limit:N)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "format", Value: "TEXT", Usage: "JSON or TEXT"},
					&cli.BoolFlag{Name: "current-patch-set", Usage: "add each change's latest revision as currentPatchSet"},
					&cli.BoolFlag{Name: "patch-sets", Usage: "add every revision as patchSets"},
					&cli.BoolFlag{Name: "dependencies", Usage: "accepted: dependsOn and neededBy are always given"},
				},
				Action: env.gerritQuery,
			},
		},
	}
}

// gerritTerms is a parsed query: every term given must match.
type gerritTerms struct {
	project string // a repository name as given
	state   string // a patches state, or "" for all
	change  string // a patch id or prefix (Change-Id form folded)
	limit   int
}

// parseGerritTerms reads the search terms of a query; anything else is
// refused naming the ones collab knows.
func parseGerritTerms(words []string) (gerritTerms, error) {
	q := gerritTerms{limit: gerritQueryLimit}
	if len(words) == 0 {
		return q, fault.New(fault.Usage, "usage: gerrit query [--format=JSON] [--current-patch-set] [--patch-sets] [--dependencies] TERM…: missing a term (project:NAME, status:open, change:ID)")
	}
	for _, w := range words {
		// Several terms may come as one word (ssh -x host gerrit query
		// "--format=JSON project:p status:open" joins them anyway).
		for _, t := range strings.Fields(w) {
			key, v, ok := strings.Cut(t, ":")
			if !ok || v == "" {
				return q, fault.New(fault.Usage, "gerrit query: unsupported term %q; known: project:NAME, status:open|merged|abandoned, change:ID, limit:N", text.Clip(t))
			}
			switch key {
			case "project", "p":
				q.project = v
			case "status", "is":
				switch strings.ToLower(v) {
				case "open", "new", "pending":
					q.state = string(patches.Open)
				case "merged":
					q.state = string(patches.Merged)
				case "abandoned", "closed":
					q.state = string(patches.Closed)
				default:
					return q, fault.New(fault.Usage, "gerrit query: unsupported %s; known: open, merged, abandoned", text.Clip(t))
				}
			case "change":
				id := v
				if len(v) == 41 && v[0] == 'I' {
					id = v[1:] // a Change-Id names the patch by its hex
				}
				p, err := ids.CheckPrefix(id)
				if err != nil {
					return q, fault.New(fault.Usage, "gerrit query: change:%s is not a patch id, a prefix of one or I and 40 hex digits", text.Clip(v))
				}
				q.change = p
			case "limit":
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 1000 {
					return q, fault.New(fault.Usage, "gerrit query: limit:%s: want 1 to 1000", text.Clip(v))
				}
				q.limit = n
			default:
				return q, fault.New(fault.Usage, "gerrit query: unsupported term %q; known: project:NAME, status:open|merged|abandoned, change:ID, limit:N", text.Clip(t))
			}
		}
	}
	return q, nil
}

// gerritChange is a patch as Gerrit's query prints a change (the fields
// git-review reads, in Gerrit's order).
type gerritChange struct {
	Project         string           `json:"project"`
	Branch          string           `json:"branch"`
	Topic           string           `json:"topic,omitempty"`
	ID              string           `json:"id"`
	Number          string           `json:"number"`
	Subject         string           `json:"subject"`
	Owner           gerritAccount    `json:"owner"`
	URL             string           `json:"url,omitempty"`
	Hashtags        []string         `json:"hashtags,omitempty"`
	Open            bool             `json:"open"`
	Status          string           `json:"status"`
	WIP             bool             `json:"wip,omitempty"`
	CurrentPatchSet *gerritPatchSet  `json:"currentPatchSet,omitempty"`
	PatchSets       []gerritPatchSet `json:"patchSets,omitempty"`
	AllReviewers    []gerritAccount  `json:"allReviewers,omitempty"`
	// DependsOn and NeededBy are the change's relation chain (its parent
	// and children in a stack), always given where there is one: Gerrit
	// gives them with --dependencies, which is accepted.
	DependsOn []gerritDependency `json:"dependsOn,omitempty"`
	NeededBy  []gerritDependency `json:"neededBy,omitempty"`
}

type gerritDependency struct {
	ID                string `json:"id"`
	Number            string `json:"number"`
	Revision          string `json:"revision"`
	Ref               string `json:"ref"`
	IsCurrentPatchSet bool   `json:"isCurrentPatchSet"`
}

func dependencies(rs []patches.Related) []gerritDependency {
	var out []gerritDependency
	for _, r := range rs {
		d := gerritDependency{ID: r.ID, Number: r.ID, Revision: r.Commit, IsCurrentPatchSet: true}
		if r.Commit != "" {
			d.Ref = collabref.RevRef(r.ID, r.Commit)
		}
		out = append(out, d)
	}
	return out
}

type gerritAccount struct {
	Name     string `json:"name"`
	Username string `json:"username"`
}

type gerritPatchSet struct {
	Number   int           `json:"number"`
	Revision string        `json:"revision"`
	Ref      string        `json:"ref"`
	Uploader gerritAccount `json:"uploader"`
}

// gerritStatus maps a patch state onto Gerrit's change status.
func gerritStatus(s patches.State) string {
	switch s {
	case patches.Merged:
		return "MERGED"
	case patches.Closed:
		return "ABANDONED"
	}
	return "NEW"
}

// toGerrit renders p; current and all say which patch sets to include.
func toGerrit(p review.Listed, current, all bool) gerritChange {
	c := gerritChange{
		Project: reponame.Display(p.Repo), Branch: p.Base, Topic: p.Topic,
		ID: p.ID, Number: p.ID, Subject: p.Title,
		Owner: gerritAccount{Name: p.Author, Username: p.Author},
		URL:   p.URL, Hashtags: p.Hashtags, Open: p.State == patches.Open, Status: gerritStatus(p.State), WIP: p.Draft,
		DependsOn: dependencies(p.Parents), NeededBy: dependencies(p.Children),
	}
	for _, r := range p.Reviewers {
		c.AllReviewers = append(c.AllReviewers, gerritAccount{Name: r, Username: r})
	}
	ps := func(r review.Revision) gerritPatchSet {
		return gerritPatchSet{Number: r.Number, Revision: r.Commit, Ref: collabref.RevRef(p.ID, r.Commit),
			Uploader: gerritAccount{Name: r.Pusher, Username: r.Pusher}}
	}
	if current && len(p.Revisions) > 0 {
		h := ps(p.Revisions[len(p.Revisions)-1])
		c.CurrentPatchSet = &h
	}
	if all {
		for _, r := range p.Revisions {
			c.PatchSets = append(c.PatchSets, ps(r))
		}
	}
	return c
}

func (env *Env) gerritQuery(c *cli.Context) error {
	format := strings.ToUpper(c.String("format"))
	if format != "JSON" && format != "TEXT" {
		return fault.New(fault.Usage, "gerrit query: --format=%s: want JSON or TEXT", text.Clip(c.String("format")))
	}
	q, err := parseGerritTerms(c.Args().Slice())
	if err != nil {
		return err
	}
	if q.project == "" && q.change == "" {
		return fault.New(fault.Usage, "gerrit query: name a project:NAME or a change:ID")
	}
	found, err := env.Ops().FindPatches(c.Context, env.actor(), ops.FindPatches{
		Repo: q.project, State: q.state, ID: q.change, Limit: q.limit,
	})
	if err != nil {
		return err
	}
	changes := make([]gerritChange, 0, len(found))
	for _, p := range found {
		changes = append(changes, toGerrit(p, c.Bool("current-patch-set"), c.Bool("patch-sets")))
	}
	if format == "JSON" {
		return writeGerritJSON(env.Stdout, changes)
	}
	return writeGerritText(env.Stdout, changes)
}

// writeGerritJSON prints Gerrit's --format=JSON: one change per line, no
// blank line, and always the stats line last; DEL and C1 controls escaped
// like every --json output's (text.JSON).
func writeGerritJSON(w io.Writer, changes []gerritChange) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, c := range changes {
		if err := enc.Encode(c); err != nil {
			return fmt.Errorf("write change: %w", err)
		}
	}
	err := enc.Encode(struct {
		Type     string `json:"type"`
		RowCount int    `json:"rowCount"`
	}{"stats", len(changes)})
	if err != nil {
		return err
	}
	_, err = w.Write(text.JSON(b.Bytes()))
	return err
}

// writeGerritText prints Gerrit's default text format, neutralised.
func writeGerritText(w io.Writer, changes []gerritChange) error {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "change %s\n  project: %s\n  branch: %s\n", c.ID, c.Project, c.Branch)
		if c.Topic != "" {
			fmt.Fprintf(&b, "  topic: %s\n", c.Topic)
		}
		fmt.Fprintf(&b, "  id: %s\n  number: %s\n  subject: %s\n  owner:\n    name: %s\n    username: %s\n",
			c.ID, c.Number, c.Subject, c.Owner.Name, c.Owner.Username)
		if c.URL != "" {
			fmt.Fprintf(&b, "  url: %s\n", c.URL)
		}
		fmt.Fprintf(&b, "  status: %s\n", c.Status)
		if c.CurrentPatchSet != nil {
			fmt.Fprintf(&b, "  currentPatchSet:\n    number: %d\n    revision: %s\n    ref: %s\n",
				c.CurrentPatchSet.Number, c.CurrentPatchSet.Revision, c.CurrentPatchSet.Ref)
		}
		for _, ps := range c.PatchSets {
			fmt.Fprintf(&b, "  patchSets:\n    number: %d\n    revision: %s\n    ref: %s\n", ps.Number, ps.Revision, ps.Ref)
		}
		for _, d := range c.DependsOn {
			fmt.Fprintf(&b, "  dependsOn:\n    id: %s\n    number: %s\n    revision: %s\n    ref: %s\n", d.ID, d.Number, d.Revision, d.Ref)
		}
		for _, d := range c.NeededBy {
			fmt.Fprintf(&b, "  neededBy:\n    id: %s\n    number: %s\n    revision: %s\n    ref: %s\n", d.ID, d.Number, d.Revision, d.Ref)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "type: stats\nrowCount: %d\n", len(changes))
	// Subjects and topics are user text: they reach the terminal through
	// the neutraliser, as every verb's plain output does (Env.Print).
	_, err := io.WriteString(w, text.ShowBody(b.String()))
	return err
}
