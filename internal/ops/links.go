package ops

import (
	"context"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// FieldOther names issue link's OTHER in refusals.
const FieldOther = "other"

// LinkIssue is an explicit link from an issue to another (issue link and
// unlink).
type LinkIssue struct {
	Issue Ref
	// Other is the other issue as written: REPO#ID, or #ID in Issue's
	// repository (ID an id or a unique prefix).
	Other string
	// Kind is relates or blocks ("" is relates); Unlink ignores it.
	Kind string
	// LeaseToken, when positive, fences the change.
	LeaseToken int64
}

// Linked is what a link or an unlink did, from the first issue's side.
type Linked struct {
	Repo    string        `json:"repo"`
	ID      string        `json:"id"`
	Link    issues.Link   `json:"link"`
	Changed bool          `json:"changed"`
	Links   []issues.Link `json:"links"`
}

// LinkIssue links two issues: write access to the first (links feed the
// work queue, as labels do), read access to the other, which is reported
// exactly like a missing one otherwise. A blocks link that would close a
// cycle is refused.
func (s *Service) LinkIssue(ctx context.Context, who Actor, in LinkIssue) (Linked, error) {
	kind, err := issues.CheckLinkKind(in.Kind)
	if err != nil {
		return Linked{}, err
	}
	return s.link(ctx, who, in, func(tx store.Tx, t, o target) (bool, error) {
		return issues.AddLink(ctx, tx, t.key, t.id, o.key, o.id, kind, who.Principal, s.now())
	}, kind)
}

// UnlinkIssue removes the link between two issues, made from either side.
func (s *Service) UnlinkIssue(ctx context.Context, who Actor, in LinkIssue) (Linked, error) {
	return s.link(ctx, who, in, func(tx store.Tx, t, o target) (bool, error) {
		return issues.RemoveLink(ctx, tx, t.key, t.id, o.key, o.id, who.Principal, s.now())
	}, "")
}

func (s *Service) link(ctx context.Context, who Actor, in LinkIssue, change func(tx store.Tx, t, o target) (bool, error), kind string) (Linked, error) {
	name, prefix, ok := strings.Cut(in.Other, "#")
	if !ok || strings.Contains(prefix, "#") {
		return Linked{}, fault.NewField(fault.Usage, FieldOther, "bad issue %q: want REPO#ID, or #ID in the same repository", text.Clip(in.Other))
	}
	t, err := s.target(ctx, who, in.Issue, access.Write, issues.Resolve, "ISSUE")
	if err != nil {
		return Linked{}, err
	}
	if name == "" {
		name = t.key
	}
	o, err := s.target(ctx, Actor{Principal: who.Principal}, Ref{Repo: name, ID: prefix}, access.Read, issues.Resolve, "")
	if err != nil {
		return Linked{}, fault.OnField(err, FieldOther)
	}
	out := Linked{Repo: t.key, ID: t.id, Link: issues.Link{Repo: o.key, ID: o.id, Kind: kind}}
	err = s.write(ctx, who, func(tx store.Tx) error {
		if err := t.fence(ctx, tx, who, in.LeaseToken, s.now()); err != nil {
			return err
		}
		if out.Changed, err = change(tx, t, o); err != nil {
			return err
		}
		out.Links, err = s.readableLinks(ctx, tx, who, t.key, t.id)
		return err
	})
	return out, err
}

// readableLinks are the links of an issue to issues who may read.
func (s *Service) readableLinks(ctx context.Context, q store.Querier, who Actor, key, id string) ([]issues.Link, error) {
	ls, err := issues.Links(ctx, q, key, id)
	if err != nil {
		return nil, err
	}
	levels, err := access.Levels(ctx, q, who.Principal)
	if err != nil {
		return nil, err
	}
	out := ls[:0]
	for _, l := range ls {
		if levels[l.Repo] >= access.Read {
			out = append(out, l)
		}
	}
	return out, nil
}

// readable keeps, of an issue's links and mentions, those in repositories
// who may read, and forgets what its references resolved to elsewhere
// (the text stays: it is in the bodies).
func (s *Service) readable(ctx context.Context, who Actor, d *issues.Detail) error {
	if len(d.Links) == 0 && len(d.MentionedIn) == 0 && len(d.Refs) == 0 {
		return nil
	}
	levels, err := access.Levels(ctx, s.DB.R(), who.Principal)
	if err != nil {
		return err
	}
	ls := d.Links[:0]
	for _, l := range d.Links {
		if levels[l.Repo] >= access.Read {
			ls = append(ls, l)
		}
	}
	d.Links = ls
	ms := d.MentionedIn[:0]
	for _, m := range d.MentionedIn {
		if levels[m.Repo] >= access.Read {
			ms = append(ms, m)
		}
	}
	d.MentionedIn = ms
	for i, r := range d.Refs {
		if levels[r.Repo] < access.Read {
			d.Refs[i].Kind, d.Refs[i].ID = nil, nil
		}
	}
	return nil
}
