// Package branches keeps branch rules: which branches of a repository are
// protected, what a submit into one needs (approvals, required checks) and
// how it merges by default, and whether a repository admin may still
// fast-forward it by a plain push. pre-receive decides with them
// (PushRules, pushcheck.Decide).
package branches

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/checks"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Strategies of a submit.
const (
	Merge  = "merge"
	FFOnly = "ff-only"
	Rebase = "rebase"
	Squash = "squash"
	// Push is the strategy a merge record names when the merge scan found
	// the patch on a branch someone pushed.
	Push = "push"
)

// Strategies lists the submit strategies in the contract's order.
var Strategies = []string{Merge, FFOnly, Rebase, Squash}

// Values of a rule's direct_push.
const (
	DirectNone  = "none"
	DirectAdmin = "admin"
)

// MaxApprovals bounds a rule's approvals; MaxChecks its required checks.
const (
	MaxApprovals = 100
	MaxChecks    = 50
)

// Rule is the contract's branch rule object.
type Rule struct {
	Branch     string   `json:"branch"`
	Approvals  int      `json:"approvals"`
	Checks     []string `json:"checks"`
	Strategy   string   `json:"strategy"`
	DirectPush string   `json:"direct_push"`
	// Resolved: submit needs every inline thread resolved.
	Resolved  bool   `json:"resolved"`
	CreatedBy string `json:"created_by"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// Default is the rule a plain "branch protect" makes.
func Default(branch string) Rule {
	return Rule{Branch: branch, Approvals: 1, Checks: []string{}, Strategy: Merge, DirectPush: DirectNone}
}

// CheckStrategy refuses a word that is not a submit strategy.
func CheckStrategy(s string) error {
	for _, k := range Strategies {
		if k == s {
			return nil
		}
	}
	return fault.New(fault.Usage, "bad strategy %q: want %s", text.Clip(s), strings.Join(Strategies, ", "))
}

// CheckDirectPush refuses a direct_push value other than none and admin.
func CheckDirectPush(s string) error {
	if s == DirectNone || s == DirectAdmin {
		return nil
	}
	return fault.New(fault.Usage, "bad direct-push %q: want none or admin", text.Clip(s))
}

// CheckBranch refuses a branch name git would not take as refs/heads/NAME
// (or that could be read as an option).
func CheckBranch(b string) error {
	if b == "" || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "refs/") || !git.IsFullRef("refs/heads/"+b) ||
		strings.Contains(b, "//") || strings.HasPrefix(b, "/") || strings.Contains(b, "/.") || strings.HasPrefix(b, ".") ||
		strings.HasSuffix(b, ".") || strings.ContainsAny(b, "\x7f") || len(b) > 255 {
		return fault.New(fault.Usage, "bad branch name %q", text.Clip(b))
	}
	for _, r := range b {
		if r < 0x20 {
			return fault.New(fault.Usage, "bad branch name %q", text.Clip(b))
		}
	}
	return nil
}

// Validate checks every field of r before anything is written; the
// checks' names are sorted and made unique.
func Validate(r *Rule) error {
	if err := CheckBranch(r.Branch); err != nil {
		return err
	}
	if r.Approvals < 0 || r.Approvals > MaxApprovals {
		return fault.New(fault.Usage, "bad approvals %d: want 0 to %d", r.Approvals, MaxApprovals)
	}
	if err := CheckStrategy(r.Strategy); err != nil {
		return err
	}
	if err := CheckDirectPush(r.DirectPush); err != nil {
		return err
	}
	if len(r.Checks) > MaxChecks {
		return fault.New(fault.Usage, "too many required checks: at most %d", MaxChecks)
	}
	seen := map[string]bool{}
	out := []string{}
	for _, c := range r.Checks {
		if err := checks.CheckName(c); err != nil {
			return err
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	slices.Sort(out)
	r.Checks = out
	return nil
}

const cols = "branch, approvals, checks, strategy, direct_push, created_by, created_at, updated_at, resolved"

func scan(s interface{ Scan(...any) error }) (Rule, error) {
	var r Rule
	var cs string
	if err := s.Scan(&r.Branch, &r.Approvals, &cs, &r.Strategy, &r.DirectPush, &r.CreatedBy, &r.CreatedAt, &r.UpdatedAt, &r.Resolved); err != nil {
		return Rule{}, err
	}
	r.Checks = []string{}
	if err := json.Unmarshal([]byte(cs), &r.Checks); err != nil {
		return Rule{}, fmt.Errorf("rule of %s: checks: %w", r.Branch, err)
	}
	return r, nil
}

// Get returns the rule of branch, or ok=false when the branch is not
// protected.
func Get(ctx context.Context, q store.Querier, repo, branch string) (r Rule, ok bool, err error) {
	r, err = scan(q.QueryRowContext(ctx, "SELECT "+cols+" FROM branch_rules WHERE repo = ? AND branch = ?", repo, branch))
	if errors.Is(err, sql.ErrNoRows) {
		return Rule{}, false, nil
	}
	if err != nil {
		return Rule{}, false, fmt.Errorf("read rule of %s: %w", branch, err)
	}
	return r, true, nil
}

// List returns the rules of repo, by branch name.
func List(ctx context.Context, q store.Querier, repo string) ([]Rule, error) {
	out := []Rule{}
	err := store.Each(ctx, q, "SELECT "+cols+" FROM branch_rules WHERE repo = ? ORDER BY branch", []any{repo},
		func(rows *sql.Rows) error {
			r, err := scan(rows)
			if err == nil {
				out = append(out, r)
			}
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("read branch rules: %w", err)
	}
	return out, nil
}

// Any reports whether repo has at least one rule: the one question a
// push of branches asks before it reads them.
func Any(ctx context.Context, q store.Querier, repo string) (bool, error) {
	var n int
	if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM branch_rules WHERE repo = ?", repo).Scan(&n); err != nil {
		return false, fmt.Errorf("read branch rules: %w", err)
	}
	return n > 0, nil
}

// Put makes r (validated) the rule of its branch, replacing any, and
// emits branch.protected, inside tx.
func Put(ctx context.Context, tx store.Querier, repo string, r Rule, actor string, now time.Time) (Rule, error) {
	if err := Validate(&r); err != nil {
		return Rule{}, err
	}
	at := store.FormatTime(now)
	old, had, err := Get(ctx, tx, repo, r.Branch)
	if err != nil {
		return Rule{}, err
	}
	r.CreatedBy, r.CreatedAt, r.UpdatedAt = actor, at, at
	if had {
		r.CreatedBy, r.CreatedAt = old.CreatedBy, old.CreatedAt
	}
	cs, err := json.Marshal(r.Checks)
	if err != nil {
		return Rule{}, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO branch_rules(repo, branch, approvals, checks, strategy, direct_push, created_by, created_at, updated_at, resolved)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(repo, branch) DO UPDATE SET approvals = excluded.approvals, checks = excluded.checks,
		  strategy = excluded.strategy, direct_push = excluded.direct_push, updated_at = excluded.updated_at, resolved = excluded.resolved`,
		repo, r.Branch, r.Approvals, string(cs), r.Strategy, r.DirectPush, r.CreatedBy, r.CreatedAt, r.UpdatedAt, r.Resolved)
	if err != nil {
		return Rule{}, fmt.Errorf("record rule of %s: %w", r.Branch, err)
	}
	if _, err := events.Emit(ctx, tx, events.BranchProtected, repo, actor, now, map[string]any{"rule": r}); err != nil {
		return Rule{}, err
	}
	return r, nil
}

// Delete removes the rule of branch and emits branch.unprotected, inside
// tx; a branch that had none is fault.NotFound.
func Delete(ctx context.Context, tx store.Querier, repo, branch, actor string, now time.Time) (Rule, error) {
	r, ok, err := Get(ctx, tx, repo, branch)
	if err != nil {
		return Rule{}, err
	}
	if !ok {
		return Rule{}, fault.New(fault.NotFound, "branch %s is not protected", branch)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM branch_rules WHERE repo = ? AND branch = ?", repo, branch); err != nil {
		return Rule{}, fmt.Errorf("drop rule of %s: %w", branch, err)
	}
	if _, err := events.Emit(ctx, tx, events.BranchUnprotected, repo, actor, now, map[string]any{"rule": r}); err != nil {
		return Rule{}, err
	}
	return r, nil
}

// PushRules are rules as pre-receive decides with them (pushcheck.Check),
// by branch.
func PushRules(rules []Rule) map[string]pushcheck.Rule {
	out := make(map[string]pushcheck.Rule, len(rules))
	for _, r := range rules {
		out[r.Branch] = pushcheck.Rule{Branch: r.Branch, AdminPush: r.DirectPush == DirectAdmin}
	}
	return out
}
