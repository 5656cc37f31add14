// Package review keeps the rules of code review: verdicts and the access
// each needs, inline anchors checked against a revision's tree, the lease
// token of a review, the check of a manual merge's commit, and how a
// patch's review stands (views, summary, timeline). The use cases that
// post a review, close, reopen or merge a patch are internal/ops'; the
// tables are internal/patches'.
package review

import (
	"context"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Verdicts of a review.
const (
	Approve        = "approve"
	RequestChanges = "request-changes"
	Comment        = "comment"
)

// MaxBody bounds a review's body.
const MaxBody = text.MaxBody

// Need is the access level a verdict needs: a vote needs write, a comment
// only read.
func Need(verdict string) access.Level {
	if verdict == Comment {
		return access.Read
	}
	return access.Write
}

// CheckVerdict validates a verdict word.
func CheckVerdict(v string) error {
	switch v {
	case Approve, RequestChanges, Comment:
		return nil
	}
	return fault.New(fault.Usage, "bad verdict %q: want approve, request-changes or comment", v)
}

// Fence is the lease token of a review: an issue prefix (empty for the
// plain form) and the token.
type Fence struct {
	issuePrefix string
	token       int64
}

// Token is the fencing token.
func (f *Fence) Token() int64 { return f.token }

// ParseFence reads a review's lease token, "N" or "ISSUE:N" ("" gives nil).
func ParseFence(s string) (*Fence, error) {
	if s == "" {
		return nil, nil
	}
	issue, tok, named := strings.Cut(s, ":")
	if !named {
		tok, issue = issue, ""
	}
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil || n <= 0 {
		return nil, fault.New(fault.Usage, "bad lease token %q: want N or ISSUE:N with N a positive integer", text.Clip(s))
	}
	if named {
		if _, err := ids.CheckPrefix(issue); err != nil {
			return nil, fault.New(fault.Usage, "bad lease token %q: want N or ISSUE:N with ISSUE an issue id", text.Clip(s))
		}
	}
	return &Fence{issuePrefix: issue, token: n}, nil
}

// Issue names the issue the token is for, as -o lease= does on a push:
// the plain form needs a patch linking exactly one issue.
func (f *Fence) Issue(ctx context.Context, q store.Querier, repo, patchID string) (string, error) {
	if f.issuePrefix != "" {
		return issues.Resolve(ctx, q, repo, f.issuePrefix)
	}
	linked, err := patches.Issues(ctx, q, repo, patchID)
	if err != nil {
		return "", err
	}
	switch len(linked) {
	case 1:
		return linked[0], nil
	case 0:
		return "", fault.NewField(fault.Usage, "lease-token", "lease token %d names no issue: patch %s links none; give %s ISSUE:%d", f.token, patchID, fault.Field("lease-token"), f.token)
	default:
		return "", fault.NewField(fault.Usage, "lease-token", "lease token %d is ambiguous: patch %s links %d issues; give %s ISSUE:%d", f.token, patchID, len(linked), fault.Field("lease-token"), f.token)
	}
}

// MergeCommit checks the commit of a manual merge: commit (a full or
// abbreviated oid) must name a commit in repoDir reachable from
// refs/heads/branch. It returns the full oid.
func MergeCommit(ctx context.Context, repoDir, commit, branch string) (string, error) {
	oid, err := resolveCommit(ctx, repoDir, commit)
	if err != nil {
		return "", err
	}
	return oid, reachable(ctx, repoDir, oid, branch)
}
