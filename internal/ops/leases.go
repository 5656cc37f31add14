package ops

import (
	"context"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
)

// Acquire is a claim of an issue's lease.
type Acquire struct {
	Issue Ref
	// TTL is how long the lease lasts unless renewed (1s to 720h); 0 is an
	// open-ended assignment.
	TTL time.Duration
	// Force overrides a live lease of someone else (repository admins).
	Force bool
}

// AcquireLease claims the lease on an open issue (write access). Without
// Force, a live lease of another is refused from a plain read first, so
// that the losers of a race answer without queueing for the writer lock;
// leases.Acquire decides inside the transaction.
func (s *Service) AcquireLease(ctx context.Context, who Actor, in Acquire) (leases.Lease, error) {
	if err := leases.CheckTTL(in.TTL); err != nil {
		return leases.Lease{}, err
	}
	t, err := s.target(ctx, who, in.Issue, access.Write, issues.ResolveOpen, "ISSUE")
	if err != nil {
		return leases.Lease{}, err
	}
	if err := mayOverride(t, in.Force); err != nil {
		return leases.Lease{}, err
	}
	if !in.Force {
		if err := leases.CheckFree(ctx, s.DB.R(), t.key, t.id, who.Principal, s.now()); err != nil {
			return leases.Lease{}, err
		}
	}
	var l leases.Lease
	err = s.write(ctx, who, func(tx store.Tx) error {
		l, err = leases.Acquire(ctx, tx, t.key, t.id, who.Principal, in.TTL, in.Force, s.now())
		return err
	})
	return l, err
}

// mayOverride is the rule of a lease override: only a repository admin
// may end someone else's live lease.
// fence checks, inside the write's transaction, that token (when
// positive; zero means the caller gave none) is who's token of the live
// lease on the issue t names: the one fencing rule of a comment or a
// labelling.
func (t target) fence(ctx context.Context, tx store.Tx, who Actor, token int64, now time.Time) error {
	if token <= 0 {
		return nil
	}
	return leases.Fence(ctx, tx, t.key, t.id, who.Principal, token, now)
}

func mayOverride(t target, force bool) error {
	if force && t.lvl < access.Admin {
		return fault.NewField(fault.Denied, FieldForce, "permission denied: only a repository admin may override a lease (%s)", fault.Field(FieldForce))
	}
	return nil
}

// Renew is an extension of the actor's live lease.
type Renew struct {
	Issue Ref
	// TTL is the new TTL; 0 keeps the lease's last one.
	TTL time.Duration
}

// RenewLease extends the actor's live lease, keeping its token. The id is
// resolved against lease rows, so a lease on an issue closed since can be
// renewed.
func (s *Service) RenewLease(ctx context.Context, who Actor, in Renew) (leases.Lease, error) {
	if err := leases.CheckTTL(in.TTL); err != nil {
		return leases.Lease{}, err
	}
	t, err := s.target(ctx, who, in.Issue, access.Write, issues.ResolveLeased, "ISSUE")
	if err != nil {
		return leases.Lease{}, err
	}
	var l leases.Lease
	err = s.write(ctx, who, func(tx store.Tx) error {
		l, err = leases.Renew(ctx, tx, t.key, t.id, who.Principal, in.TTL, s.now())
		return err
	})
	return l, err
}

// Release is the end of a lease.
type Release struct {
	Issue Ref
	// Force ends someone else's live lease (repository admins).
	Force bool
}

// Released is what a release did.
type Released struct {
	// Released is false when there was no lease to end ("not held", still
	// a success for a retrying client).
	Released bool
	Repo     string // the repository's key
	IssueID  string
}

// ReleaseLease frees a lease. The id is resolved against issues and lease
// rows together.
func (s *Service) ReleaseLease(ctx context.Context, who Actor, in Release) (Released, error) {
	t, err := s.target(ctx, who, in.Issue, access.Write, issues.ResolveIssueOrLease, "ISSUE")
	if err != nil {
		return Released{}, err
	}
	if err := mayOverride(t, in.Force); err != nil {
		return Released{}, err
	}
	var released bool
	err = s.write(ctx, who, func(tx store.Tx) error {
		released, err = leases.Release(ctx, tx, t.key, t.id, who.Principal, in.Force, s.now())
		return err
	})
	if err != nil {
		return Released{}, err
	}
	return Released{Released: released, Repo: t.key, IssueID: t.id}, nil
}

// Leases lists a repository's live leases, oldest tenure first.
func (s *Service) Leases(ctx context.Context, who Actor, repo string) ([]leases.Lease, error) {
	sc, err := s.repo(ctx, who, repo, access.Read)
	if err != nil {
		return nil, err
	}
	return leases.List(ctx, s.DB.R(), sc.key, s.now())
}

// TitledLease is a live lease with its issue's title.
type TitledLease struct {
	leases.Lease
	Title string
}

// TitledLeases is Leases with each issue's title, as the leases page
// shows them; it also returns the repository's key.
func (s *Service) TitledLeases(ctx context.Context, who Actor, repo string) (string, []TitledLease, error) {
	sc, err := s.repo(ctx, who, repo, access.Read)
	if err != nil {
		return "", nil, err
	}
	var out []TitledLease
	err = s.DB.Read(ctx, func(tx store.Tx) error {
		ls, err := leases.List(ctx, tx, sc.key, s.now())
		if err != nil {
			return err
		}
		for _, l := range ls {
			row := TitledLease{Lease: l}
			if is, ok, err := issues.Lookup(ctx, tx, sc.key, l.IssueID, s.now()); err != nil {
				return err
			} else if ok {
				row.Title = is.Title
			}
			out = append(out, row)
		}
		return nil
	})
	return sc.key, out, err
}
