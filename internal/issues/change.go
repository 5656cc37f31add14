package issues

import (
	"context"
	"fmt"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Edit is one change of an issue's state and/or title by Principal, who
// has Level on the issue's repository (the verbs and the web both go
// through Change, so the rule of who may is written once).
type Edit struct {
	Principal string
	Level     access.Level
	// Person, when set, is whom Principal acts for, with PersonLevel:
	// the edit must be one the person may make too.
	Person      string
	PersonLevel access.Level
	State       *State  // Open or Closed; nil leaves the state
	Title       *string // nil leaves the title
	Body        *string // nil leaves the body
	// LeaseToken, when positive, fences the write: it must be the
	// principal's current token of a live lease on the issue.
	LeaseToken int64
}

// verb names the edit in refusals.
func (e Edit) verb() string {
	switch {
	case e.State != nil && *e.State == Closed:
		return "close"
	case e.State != nil && *e.State == Open:
		return "reopen"
	}
	return "change"
}

// MayChange applies the rule of who may change issue cur: its author may
// with read access, anyone else needs write; while a live lease is held,
// only its holder or an admin may change its state (others may still
// comment). A state change is a close or reopen; verb names it in the
// refusal.
func MayChange(cur Issue, principal string, lvl access.Level, stateChange bool, verb string) error {
	if err := mayEdit(cur, principal, lvl, verb); err != nil {
		return err
	}
	if stateChange {
		return mayChangeState(cur, principal, lvl, verb)
	}
	return nil
}

// mayEdit: an issue is one's own when one filed it, or it was filed on
// one's behalf.
func mayEdit(cur Issue, principal string, lvl access.Level, verb string) error {
	own := cur.Author == principal || (cur.OnBehalfOf != nil && *cur.OnBehalfOf == principal)
	if principal == "" || (!own && lvl < access.Write) {
		return fault.New(fault.Denied, "permission denied: write access to %s needed to %s an issue filed by someone else",
			reponame.Display(cur.Repo), verb)
	}
	return nil
}

func mayChangeState(cur Issue, principal string, lvl access.Level, verb string) error {
	if l := cur.Lease; l != nil && l.Holder != principal && lvl < access.Admin {
		var exp any
		until := "with no expiry"
		if l.ExpiresAt != nil {
			exp = *l.ExpiresAt
			until = "until " + l.ExpiresAt.String()
		}
		return fault.New(fault.Conflict, "cannot %s issue %s: it is leased by %s %s (only the holder or an admin may)", verb, cur.ID, l.Holder, until).
			With("holder", l.Holder).With("expires_at", exp)
	}
	return nil
}

// Change applies e to issue id of repo inside the caller's write
// transaction, after the checks of MayChange and the lease fence. changed is false when
// nothing differed. A state change emits issue.closed or issue.reopened; a
// new title or body issue.edited.
func Change(ctx context.Context, tx store.Querier, repo, id string, e Edit, now time.Time) (is Issue, changed bool, err error) {
	if e.State != nil && *e.State != Open && *e.State != Closed {
		return Issue{}, false, fault.New(fault.Usage, "bad state %q: want open or closed", *e.State)
	}
	var title string
	if e.Title != nil {
		if title, err = CheckTitle(*e.Title); err != nil {
			return Issue{}, false, err
		}
	}
	cur, ok, err := Lookup(ctx, tx, repo, id, now)
	if err != nil {
		return Issue{}, false, err
	}
	if !ok {
		return Issue{}, false, fault.New(fault.NotFound, "no issue %s", id)
	}
	// A stale token is told as such before the holder rule, so that a
	// fenced-off worker learns why.
	if err := mayEdit(cur, e.Principal, e.Level, e.verb()); err != nil {
		return Issue{}, false, err
	}
	if e.Person != "" {
		if err := mayEdit(cur, e.Person, e.PersonLevel, e.verb()); err != nil {
			return Issue{}, false, fault.OnField(err, "on-behalf-of")
		}
	}
	if e.LeaseToken > 0 {
		if err := leases.Fence(ctx, tx, repo, id, e.Principal, e.LeaseToken, now); err != nil {
			return Issue{}, false, err
		}
	}
	if e.State != nil {
		if err := mayChangeState(cur, e.Principal, e.Level, e.verb()); err != nil {
			return Issue{}, false, err
		}
	}
	is = cur
	var edited []string
	if e.Title != nil && title != cur.Title {
		if _, err := tx.ExecContext(ctx, "UPDATE issues SET title = ?, updated_at = ? WHERE repo = ? AND id = ?",
			title, store.FormatTime(now), repo, id); err != nil {
			return Issue{}, false, fmt.Errorf("retitle issue %s: %w", id, err)
		}
		is.Title, is.UpdatedAt, changed = title, store.At(now), true
		edited = append(edited, "title")
	}
	if e.Body != nil && *e.Body != cur.Body {
		if err := text.Check("body", *e.Body, text.MaxBody); err != nil {
			return Issue{}, false, err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE issues SET body = ?, updated_at = ? WHERE repo = ? AND id = ?",
			*e.Body, store.FormatTime(now), repo, id); err != nil {
			return Issue{}, false, fmt.Errorf("edit issue %s: %w", id, err)
		}
		is.Body, is.UpdatedAt, changed = *e.Body, store.At(now), true
		edited = append(edited, "body")
	}
	if len(edited) > 0 {
		if _, err := events.Emit(ctx, tx, events.IssueEdited, repo, e.Principal, now, struct {
			Issue
			Changed []string `json:"changed"`
		}{is, edited}); err != nil {
			return Issue{}, false, err
		}
	}
	if e.State != nil {
		var set bool
		if is, set, err = SetState(ctx, tx, repo, id, *e.State, e.Principal, now); err != nil {
			return Issue{}, false, err
		}
		changed = changed || set
	}
	return is, changed, nil
}
