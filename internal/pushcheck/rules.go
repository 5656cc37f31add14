package pushcheck

import (
	"context"
	"slices"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
)

// Rule is what pre-receive needs of a branch rule (branches.Rule): the
// protected branch, and whether a repository admin may still fast-forward
// it by a plain push.
type Rule struct {
	Branch    string
	AdminPush bool
}

// Move is what a push does to a branch, as pre-receive sees it.
type Move int

const (
	// Create makes a branch that did not exist.
	Create Move = iota
	// FastForward moves it to a descendant of its tip.
	FastForward
	// Rewind moves it anywhere else (a force push).
	Rewind
	// Remove deletes it.
	Remove
)

// Decide says whether a push may make move on the protected branch of
// rule r: nil, or a one-line refusal that names patch submit. Deleting or
// rewinding is refused to everyone; creating it is a repository admin's;
// a fast-forward only a repository admin's where the rule says admin.
func Decide(r Rule, move Move, repoAdmin bool) error {
	b := r.Branch
	switch move {
	case Remove:
		return fault.New(fault.Denied, "cannot delete protected branch %s (unprotect it first); changes reach it through patch submit", b)
	case Rewind:
		return fault.New(fault.Denied, "cannot force-push protected branch %s; changes reach it through patch submit", b)
	case Create:
		if repoAdmin {
			return nil
		}
		return fault.New(fault.Denied, "branch %s is protected and only a repository admin creates it; then push to refs/for/%s and use patch submit", b, b)
	default:
		if repoAdmin && r.AdminPush {
			return nil
		}
		return fault.New(fault.Denied, "branch %s is protected: push to refs/for/%s and use patch submit", b, b)
	}
}

// EncodeRules writes rules for serve's hand-off: "BRANCH:admin" or
// "BRANCH:none" per rule, space-separated (git refuses ':' and blanks in a
// ref name), or "-" for none, so that an empty value never passes for
// "no rules".
func EncodeRules(rules map[string]Rule) string {
	if len(rules) == 0 {
		return "-"
	}
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		mode := "none"
		if r.AdminPush {
			mode = "admin"
		}
		out = append(out, r.Branch+":"+mode)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// DecodeRules reads EncodeRules' value; ok is false for an empty or
// malformed one, which the hooks treat as no hand-off at all (they read
// the rules from the database).
func DecodeRules(v string) (rules map[string]Rule, ok bool) {
	rules = map[string]Rule{}
	if v == "-" {
		return rules, true
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return nil, false
	}
	for _, w := range f {
		b, mode, found := strings.Cut(w, ":")
		if !found || b == "" || !git.IsFullRef(HeadsPrefix+b) || (mode != "none" && mode != "admin") {
			return nil, false
		}
		rules[b] = Rule{Branch: b, AdminPush: mode == "admin"}
	}
	return rules, true
}

// enforceRules refuses a push that makes a move the branch rules forbid
// (Decide).
func enforceRules(ctx context.Context, p Push) error {
	if !TouchesBranches(p.Updates) {
		return nil
	}
	rules, err := p.Rules(ctx)
	if err != nil || len(rules) == 0 {
		return err
	}
	admin := -1 // unknown until a rule needs it
	for _, u := range p.Updates {
		if !strings.HasPrefix(u.Ref, HeadsPrefix) {
			continue
		}
		// A symbolic ref among the branches (an operator's alias, say
		// master for main) is updated and deleted through: the rule of
		// the branch it names decides. git hands the hook the alias's
		// name with its target's old value.
		ref := u.Ref
		if target, sym, err := p.Git.SymbolicRef(ctx, u.Ref); err != nil {
			return err
		} else if sym {
			ref = target
		}
		b, ok := strings.CutPrefix(ref, HeadsPrefix)
		if !ok {
			continue
		}
		r, ok := rules[b]
		if !ok {
			continue
		}
		move := FastForward
		switch {
		case u.New == git.ZeroOID:
			move = Remove
		case u.Old == git.ZeroOID:
			move = Create
		default:
			ff, err := p.Git.IsAncestor(ctx, u.Old, u.New)
			if err != nil {
				return err
			}
			if !ff {
				move = Rewind
			}
		}
		if admin < 0 {
			yes, err := p.Admin(ctx)
			if err != nil {
				return err
			}
			admin = 0
			if yes {
				admin = 1
			}
		}
		if err := Decide(r, move, admin == 1); err != nil {
			return err
		}
	}
	return nil
}
