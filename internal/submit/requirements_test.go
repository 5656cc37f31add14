package submit

import (
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/branches"
	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/patches"
)

func TestEvaluate(t *testing.T) {
	rule := branches.Default("main")
	rule.Approvals = 1
	rule.Checks = []string{"ci"}
	twoRevs := []patches.Revision{{Number: 1, Pusher: "ada"}, {Number: 2, Pusher: "pete"}}
	review := func(rev int, who, verdict string) patches.Review {
		return patches.Review{Revision: rev, Author: who, Verdict: verdict}
	}
	writers := map[string]bool{"bob": true, "carl": true, "ada": true, "pete": true}
	ok := mergeable(true)
	for _, tc := range []struct {
		name  string
		facts Facts
		unmet string // names of the unmet requirements, in order
		want  string // a part of some requirement's detail
	}{
		{"all good", Facts{Patch: patch(twoRevs, review(2, "bob", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "robot"}}, Mergeable: ok}, "", "1 of 1 on revision 2: bob"},
		{"unprotected needs nothing", Facts{Patch: patch(twoRevs), Writers: writers, Mergeable: ok}, "", "none required"},
		{"unprotected still blocks on request-changes", Facts{Patch: patch(twoRevs, review(2, "bob", "request-changes")), Writers: writers, Mergeable: ok},
			"no-changes-requested", "changes requested by bob"},
		{"approval on an older revision", Facts{Patch: patch(twoRevs, review(1, "bob", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "robot"}}, Mergeable: ok}, "approvals", "0 of 1"},
		{"author and pusher do not count", Facts{Patch: patch(twoRevs, review(2, "ada", "approve"), review(2, "pete", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "robot"}}, Mergeable: ok}, "approvals", "ada (the author), pete (pushed the revision)"},
		{"a reader's approval does not count", Facts{Patch: patch(twoRevs, review(2, "rita", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "robot"}}, Mergeable: ok}, "approvals", "rita (no write access)"},
		{"changes requested then approved", Facts{Patch: patch(twoRevs, review(2, "bob", "request-changes"), review(2, "bob", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "robot"}}, Mergeable: ok}, "", "bob"},
		{"approved then changes requested", Facts{Patch: patch(twoRevs, review(2, "bob", "approve"), review(2, "carl", "approve"), review(2, "bob", "request-changes")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "robot"}}, Mergeable: ok}, "no-changes-requested", "changes requested by bob"},
		{"a comment is no vote", Facts{Patch: patch(twoRevs, review(2, "bob", "approve"), review(2, "bob", "comment")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "robot"}}, Mergeable: ok}, "", "bob"},
		{"check pending", Facts{Patch: patch(twoRevs, review(2, "bob", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "pending", By: "robot"}}, Mergeable: ok}, "check:ci", "pending"},
		{"check missing", Facts{Patch: patch(twoRevs, review(2, "bob", "approve")), Rule: &rule, Writers: writers, Mergeable: ok}, "check:ci", "not reported"},
		{"check by the author", Facts{Patch: patch(twoRevs, review(2, "bob", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "ada"}}, Mergeable: ok}, "check:ci", "author"},
		{"check by the pusher", Facts{Patch: patch(twoRevs, review(2, "bob", "approve")), Rule: &rule, Writers: writers,
			Checks: []checks.Check{{Name: "ci", State: "success", By: "pete"}}, Mergeable: ok}, "check:ci", "pusher"},
		{"everything wrong at once", Facts{Patch: func() patches.Patch {
			p := patch(twoRevs, review(2, "bob", "request-changes"))
			p.State, p.Draft = patches.Closed, true
			return p
		}(), Rule: &rule, Writers: writers, Mergeable: mergeable(false)}, "open ready approvals no-changes-requested check:ci mergeable", "the patch is closed"},
		{"mergeable not known", Facts{Patch: patch(twoRevs), Writers: writers}, "mergeable", "not checked"},
		{"an open parent blocks", Facts{Patch: withParent(patch(twoRevs), patches.Open), Writers: writers, Mergeable: ok,
			OpenParents: []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"}}, "parents", "aaaaaaaaaaaa, bbbbbbbbbbbb; submit those first, or this one with --chain"},
		{"a chain submits the open parents with it", Facts{Patch: withParent(patch(twoRevs), patches.Open), Writers: writers, Mergeable: ok,
			OpenParents: []string{"aaaaaaaaaaaaaaaa"}, Chained: true}, "", "submitted with it"},
		{"a merged parent is no obstacle", Facts{Patch: withParent(patch(twoRevs), patches.Merged), Writers: writers, Mergeable: ok}, "", "is merged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := Evaluate(tc.facts)
			var names []string
			for _, r := range st.Unmet() {
				names = append(names, r.Name)
			}
			if got := strings.Join(names, " "); got != tc.unmet {
				t.Errorf("unmet %q, want %q: %+v", got, tc.unmet, st.Requirements)
			}
			if st.Submittable != (tc.unmet == "") {
				t.Errorf("submittable %v", st.Submittable)
			}
			var all []string
			for _, r := range st.Requirements {
				all = append(all, r.Detail)
			}
			if !strings.Contains(strings.Join(all, "|"), tc.want) {
				t.Errorf("details %q lack %q", all, tc.want)
			}
		})
	}
	if s := StrategyOf("", &branches.Rule{Strategy: branches.Rebase}); s != branches.Rebase {
		t.Errorf("rule's strategy: %s", s)
	}
	if s := StrategyOf("", nil); s != branches.Merge {
		t.Errorf("default strategy: %s", s)
	}
	if s := StrategyOf(branches.Squash, &branches.Rule{Strategy: branches.Rebase}); s != branches.Squash {
		t.Errorf("asked strategy: %s", s)
	}
}

func patch(revs []patches.Revision, reviews ...patches.Review) patches.Patch {
	return patches.Patch{ID: pid, State: patches.Open, Author: "ada", Base: "main", Revisions: revs, Reviews: reviews}
}

func mergeable(ok bool) *Requirement {
	if ok {
		return &Requirement{OK: true, Detail: "applies"}
	}
	return &Requirement{OK: false, Detail: "conflicts in a.txt"}
}

func withParent(p patches.Patch, state patches.State) patches.Patch {
	p.Parents = []patches.Related{{ID: "aaaaaaaaaaaaaaaa", State: state}}
	return p
}
