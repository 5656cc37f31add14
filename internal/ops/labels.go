package ops

import (
	"context"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/labels"
	"github.com/collab-forge/collab/internal/store"
)

// LabelIssue is a change of an issue's labels: Add and Remove (`issue
// label`), or Set, the whole new set (PUT …/issues/ID/labels).
type LabelIssue struct {
	Issue       Ref
	Add, Remove []string
	// Set, when not nil, replaces the whole set; Add and Remove are then
	// empty.
	Set *[]string
	// LeaseToken, when positive, fences the change: it must be the
	// actor's token of the live lease on the issue.
	LeaseToken int64
}

// LabelIssue adds and removes, or sets, an issue's labels. Labels feed the
// agents' work queue, so it needs write access (CONTRACT.md); closed
// issues may be labelled too. Every label is checked before anything is
// read, and the set that results (at most labels.Max) inside the
// transaction that writes it with its issue.labeled; a change that changes
// nothing writes nothing.
func (s *Service) LabelIssue(ctx context.Context, who Actor, in LabelIssue) (issues.Labeled, error) {
	switch {
	case in.Set == nil && len(in.Add) == 0 && len(in.Remove) == 0:
		return issues.Labeled{}, fault.New(fault.Usage, "nothing to change: give labels to add or remove")
	case in.Set != nil && (len(in.Add) > 0 || len(in.Remove) > 0):
		return issues.Labeled{}, fault.New(fault.Usage, "give either the whole set of labels or labels to add and remove, not both")
	}
	for _, ls := range [][]string{in.Add, in.Remove, deref(in.Set)} {
		if _, err := labels.Set(ls); err != nil {
			return issues.Labeled{}, err
		}
	}
	t, err := s.target(ctx, who, in.Issue, access.Write, issues.Resolve, "ISSUE")
	if err != nil {
		return issues.Labeled{}, err
	}
	var ev issues.Labeled
	err = s.write(ctx, who, func(tx store.Tx) error {
		now := s.now()
		if err := t.fence(ctx, tx, who, in.LeaseToken, now); err != nil {
			return err
		}
		if in.Set != nil {
			ev, _, err = issues.SetLabels(ctx, tx, t.key, t.id, *in.Set, who.Principal, now)
		} else {
			ev, _, err = issues.EditLabels(ctx, tx, t.key, t.id, in.Add, in.Remove, who.Principal, now)
		}
		return err
	})
	return ev, err
}

func deref(p *[]string) []string {
	if p == nil {
		return nil
	}
	return *p
}
