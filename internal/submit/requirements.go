package submit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/patches"
)

// Requirement names (CONTRACT.md "JSON shapes", submit).
const (
	ReqOpen               = "open"
	ReqReady              = "ready"
	ReqApprovals          = "approvals"
	ReqNoChangesRequested = "no-changes-requested"
	ReqCheckPrefix        = "check:"
	ReqMergeable          = "mergeable"
	// ReqParents holds when no patch below this one in its stack is
	// still open, or when patch submit --chain submits them with it.
	ReqParents = "parents"
	// ReqResolved is a rule's --resolved: no unresolved inline thread.
	ReqResolved = "resolved"
)

// Requirement is one submit requirement and whether it holds.
type Requirement struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Status is the contract's submit object of a patch.
type Status struct {
	Submittable  bool          `json:"submittable"`
	Strategy     string        `json:"strategy"`
	Requirements []Requirement `json:"requirements"`
	// Approvers are the approvals that count, for Reviewed-by:.
	Approvers []string `json:"approvers"`
	// Protected says whether the patch's base branch has a rule.
	Protected bool `json:"protected"`
}

// Unmet returns the requirements that do not hold.
func (s Status) Unmet() []Requirement {
	var out []Requirement
	for _, r := range s.Requirements {
		if !r.OK {
			out = append(out, r)
		}
	}
	return out
}

// Facts are what the requirements are decided from; all about the patch's
// latest revision.
type Facts struct {
	Patch patches.Patch
	// Rule is the base branch's rule, nil when it is not protected.
	Rule *branches.Rule
	// Strategy is the one asked for ("" takes the rule's, else merge).
	Strategy string
	// Writers says which reviewers have write access now.
	Writers map[string]bool
	// Checks are the latest revision's checks.
	Checks []checks.Check
	// Mergeable is whether the strategy applies: nil when it is not known
	// yet (Evaluate then reports it unmet, as not checked).
	Mergeable *Requirement
	// OpenParents are the open patches below this one in its stack,
	// bottom first; Chained says they are submitted with it (--chain).
	OpenParents []string
	Chained     bool
}

// StrategyOf is the strategy a submit uses: asked, else the rule's, else
// merge.
func StrategyOf(asked string, rule *branches.Rule) string {
	if asked != "" {
		return asked
	}
	if rule != nil {
		return rule.Strategy
	}
	return branches.Merge
}

// Evaluate decides every requirement from f.
func Evaluate(f Facts) Status {
	p := f.Patch
	st := Status{Strategy: StrategyOf(f.Strategy, f.Rule), Protected: f.Rule != nil, Approvers: []string{}}
	add := func(name string, ok bool, detail string, args ...any) {
		st.Requirements = append(st.Requirements, Requirement{Name: name, OK: ok, Detail: fmt.Sprintf(detail, args...)})
	}
	if p.State == patches.Open {
		add(ReqOpen, true, "open")
	} else {
		add(ReqOpen, false, "the patch is %s", p.State)
	}
	if p.Draft {
		add(ReqReady, false, "the patch is a draft")
	} else {
		add(ReqReady, true, "not a draft")
	}
	switch {
	case len(f.OpenParents) > 0 && f.Chained:
		add(ReqParents, true, "submitted with it, bottom up: %s", shortIDs(f.OpenParents))
	case len(f.OpenParents) > 0:
		add(ReqParents, false, "open below it in its stack: %s; submit those first, or this one with --chain", shortIDs(f.OpenParents))
	case len(p.Parents) > 0:
		add(ReqParents, true, "parent %s is %s", shortID(p.Parents[0].ID), p.Parents[0].State)
	}
	head := p.Head()
	if len(p.Revisions) == 0 {
		add(ReqApprovals, false, "the patch has no revision")
	}
	// Each reviewer's latest vote on the latest revision.
	latest := map[string]string{}
	var order []string
	for _, r := range p.Reviews {
		if r.Revision != head.Number || (r.Verdict != "approve" && r.Verdict != "request-changes") {
			continue
		}
		if _, seen := latest[r.Author]; !seen {
			order = append(order, r.Author)
		}
		latest[r.Author] = r.Verdict
	}
	var ignored, requested []string
	for _, who := range order {
		switch v := latest[who]; {
		case v == "request-changes":
			requested = append(requested, who)
		case who == p.Author:
			ignored = append(ignored, who+" (the author)")
		case who == head.Pusher:
			ignored = append(ignored, who+" (pushed the revision)")
		case !f.Writers[who]:
			ignored = append(ignored, who+" (no write access)")
		default:
			st.Approvers = append(st.Approvers, who)
		}
	}
	sort.Strings(st.Approvers)
	need := 0
	if f.Rule != nil {
		need = f.Rule.Approvals
	}
	if len(p.Revisions) > 0 {
		detail := fmt.Sprintf("%d of %d on revision %d", len(st.Approvers), need, head.Number)
		if need == 0 && f.Rule == nil {
			detail = fmt.Sprintf("none required (%s is not protected); %d on revision %d", p.Base, len(st.Approvers), head.Number)
		}
		if len(st.Approvers) > 0 {
			detail += ": " + strings.Join(st.Approvers, ", ")
		}
		if len(ignored) > 0 {
			detail += "; not counted: " + strings.Join(ignored, ", ")
		}
		add(ReqApprovals, len(st.Approvers) >= need, "%s", detail)
	}
	if len(requested) > 0 {
		add(ReqNoChangesRequested, false, "changes requested by %s", strings.Join(requested, ", "))
	} else {
		add(ReqNoChangesRequested, true, "none requested")
	}
	if f.Rule != nil {
		byName := map[string]checks.Check{}
		for _, c := range f.Checks {
			byName[c.Name] = c
		}
		for _, name := range f.Rule.Checks {
			c, ok := byName[name]
			switch {
			case !ok:
				add(ReqCheckPrefix+name, false, "not reported on revision %d", head.Number)
			case c.State != checks.Success:
				add(ReqCheckPrefix+name, false, "%s", c.State)
			case c.By == p.Author:
				add(ReqCheckPrefix+name, false, "success reported by the author (%s) does not count", c.By)
			case c.By == head.Pusher:
				add(ReqCheckPrefix+name, false, "success reported by the revision's pusher (%s) does not count", c.By)
			default:
				add(ReqCheckPrefix+name, true, "success (%s)", c.By)
			}
		}
	}
	if f.Rule != nil && f.Rule.Resolved {
		var open []string
		for _, r := range p.Reviews {
			if r.Thread != nil && *r.Thread == r.ID && !r.Resolved && !r.Draft {
				open = append(open, shortID(r.ID))
			}
		}
		if len(open) > 0 {
			add(ReqResolved, false, "%d unresolved thread%s: %s", len(open), map[bool]string{true: "", false: "s"}[len(open) == 1], strings.Join(open, ", "))
		} else {
			add(ReqResolved, true, "every thread resolved")
		}
	}
	if f.Mergeable != nil {
		m := *f.Mergeable
		m.Name = ReqMergeable
		st.Requirements = append(st.Requirements, m)
	} else {
		add(ReqMergeable, false, "not checked")
	}
	st.Submittable = len(st.Unmet()) == 0
	return st
}

func shortIDs(ids []string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = shortID(id)
	}
	return strings.Join(out, ", ")
}

// Refusal is the one-line message of a submit refused for unmet.
func Refusal(patchID string, unmet []Requirement) string {
	var parts []string
	for _, r := range unmet {
		parts = append(parts, r.Name+" ("+r.Detail+")")
	}
	return fmt.Sprintf("patch %s cannot be submitted: %s", patchID, strings.Join(parts, "; "))
}
