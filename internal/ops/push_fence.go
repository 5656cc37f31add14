package ops

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/store"
)

// onlyFor reports whether every update is to a refs/for ref: proc-receive
// checks such a push's tokens in the transaction that records it.
func onlyFor(us []Update) bool {
	for _, u := range us {
		if !strings.HasPrefix(u.Ref, ForPrefix) {
			return false
		}
	}
	return true
}

// leaseTokens resolves the -o lease= tokens of a push that moves refs
// other than refs/for: lease=ISSUE:N names its issue; a plain lease=N
// names the one issue the push names, by -o fixes= or else by the Fixes:
// trailers of the tips it pushes to branches (more or fewer is a usage
// refusal). It returns the tokens by full issue id, and the issue a
// refusal was about.
func (e *Push) leaseTokens(ctx context.Context, q store.Querier, updates []Update, opts pushcheck.Options) (map[string]int64, string, error) {
	tokens := map[string]int64{}
	var plain []pushcheck.Lease
	for _, l := range opts.Leases {
		if l.Issue == "" {
			plain = append(plain, l)
			continue
		}
		id, err := issues.Resolve(ctx, q, e.Repo, l.Issue)
		if err != nil {
			return nil, l.Issue, fault.OnField(err, "lease")
		}
		tokens[id] = l.Token
	}
	if len(plain) == 0 {
		return tokens, "", nil
	}
	named := opts.Fixes
	if len(named) == 0 {
		var tips []string
		for _, u := range updates {
			if strings.HasPrefix(u.Ref, HeadsPrefix) && u.New != git.ZeroOID {
				tips = append(tips, u.New)
			}
		}
		if len(tips) > 0 {
			cs, err := e.Git.Commits(ctx, tips...)
			if err != nil {
				return nil, "", fault.Wrap(err, "cannot read the pushed commits")
			}
			for _, c := range cs {
				named = append(named, c.Fixes...)
			}
		}
	}
	seen := map[string]bool{}
	var ids []string
	for _, p := range named {
		id, err := issues.Resolve(ctx, q, e.Repo, strings.ToLower(strings.TrimSpace(p)))
		if err != nil {
			if k := fault.KindOf(err); k == fault.NotFound || k == fault.Usage {
				continue
			}
			return nil, "", err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, l := range plain {
		if len(ids) != 1 {
			return nil, "", fault.New(fault.Usage, "lease=%d needs exactly one issue named by fixes= or a Fixes: trailer (this push names %d); use lease=ISSUE:TOKEN", l.Token, len(ids))
		}
		tokens[ids[0]] = l.Token
	}
	return tokens, "", nil
}

// fenceTokens checks, before any ref moves, every -o lease= token of a push
// that moves refs other than refs/for: each must be the current tenure's
// of a live lease held by the pusher (leases.Fence), or the whole push is
// refused. It returns the issue a refusal was about. The check is a read:
// a takeover after it is caught where post-receive records the merge
// (issues.CloseFenced).
func (e *Push) fenceTokens(ctx context.Context, updates []Update, rawOpts []string) (string, error) {
	if !pushcheck.CarriesLease(rawOpts) || onlyFor(updates) {
		return "", nil
	}
	opts, err := pushcheck.ParseOptions(rawOpts)
	if err != nil {
		return "", err
	}
	q := e.DB.R()
	tokens, issue, err := e.leaseTokens(ctx, q, updates, opts)
	if err != nil {
		return issue, err
	}
	now := e.Now()
	for _, id := range slices.Sorted(maps.Keys(tokens)) {
		if err := leases.Fence(ctx, q, e.Repo, id, e.Principal, tokens[id], now); err != nil {
			return id, err
		}
	}
	return "", nil
}

// issueError is a refusal about one issue, for the log to name it.
type issueError struct {
	issue string
	err   error
}

func (e *issueError) Error() string { return e.err.Error() }
func (e *issueError) Unwrap() error { return e.err }

// aboutIssue says that err, a refusal, was about issue.
func aboutIssue(issue string, err error) error { return &issueError{issue: issue, err: err} }

// refusedFor is the issue a refusal was about (aboutIssue), or "".
func refusedFor(err error) string {
	var ie *issueError
	if errors.As(err, &ie) {
		return ie.issue
	}
	return ""
}
