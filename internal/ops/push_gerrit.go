package ops

import (
	"context"
	"encoding/hex"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/store"
)

// Gerrit's ways of saying things on a push, so that its own client
// (git-review) and its users' habits work unmodified: the
// refs/for/BASE%opt,opt=v suffix and the Change-Id: trailer.

// ChangeID returns the patch id that a Gerrit Change-Id trailer value
// names: "I" and 40 hex digits, the digits lowercased (all zeros is
// well-formed but names nothing: TrailerIDs skips it, CheckTip refuses
// it). ok is false for anything else.
func ChangeID(v string) (id string, ok bool) {
	if len(v) != 41 || v[0] != 'I' {
		return "", false
	}
	id = strings.ToLower(v[1:])
	if _, err := hex.DecodeString(id); err != nil {
		return "", false
	}
	return id, true
}

// TrailerIDs are the patch ids a commit names: its Patch: trailers, or, on
// a commit without one, its well-formed Change-Id: trailers.
func TrailerIDs(c git.Commit) []string {
	if len(c.Patch) > 0 {
		return c.Patch
	}
	var out []string
	for _, v := range c.ChangeID {
		if id, ok := ChangeID(v); ok && strings.Trim(id, "0") != "" {
			out = append(out, id)
		}
	}
	return out
}

// addRequests records the reviewers (who must exist; named or by e-mail)
// and hashtags a push names on patch id, inside tx.
func (e *Push) addRequests(ctx context.Context, tx store.Querier, id string, o Options, now time.Time) error {
	names, err := principals.Reviewers(ctx, tx, o.Reviewers)
	if err != nil {
		return err
	}
	if _, err := patches.AddReviewers(ctx, tx, e.Repo, id, names, e.Principal, now); err != nil {
		return err
	}
	_, err = patches.AddHashtags(ctx, tx, e.Repo, id, o.Hashtags)
	return err
}
