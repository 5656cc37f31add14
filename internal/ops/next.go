package ops

import (
	"context"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/labels"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
)

// AcquireNext is a claim from a repository's work queue.
type AcquireNext struct {
	Repo string
	// Labels the issue must all carry (none: any open issue).
	Labels []string
	// TTL is how long the lease lasts unless renewed (1s to 720h); 0 is an
	// open-ended assignment.
	TTL time.Duration
	// Request is the caller's idempotency key ("": none): a retry with the
	// same key gets the same claim back while its tenure is live.
	Request string
	// Keyed says a key was given at all, so that an empty one is refused
	// rather than taken for none.
	Keyed bool
}

// AcquireNext leases the oldest open issue of the repository that carries
// every label and has no live lease (write access), exactly as
// AcquireLease leases a named one (leases.AcquireNext: the pick and the
// lease in one transaction, so askers at once each get a different issue).
// An empty queue is told (NotFound, nothing written) from a plain read
// first, so that idle agents polling it never queue for the writer lock.
func (s *Service) AcquireNext(ctx context.Context, who Actor, in AcquireNext) (leases.Lease, error) {
	if err := leases.CheckTTL(in.TTL); err != nil {
		return leases.Lease{}, err
	}
	ls, err := labels.Set(in.Labels)
	if err != nil {
		return leases.Lease{}, err
	}
	if in.Keyed {
		if err := leases.CheckRequest(in.Request); err != nil {
			return leases.Lease{}, err
		}
	}
	sc, err := s.repo(ctx, who, in.Repo, access.Write)
	if err != nil {
		return leases.Lease{}, err
	}
	if in.Keyed {
		// A retry whose claim stands is answered from a read: no writer
		// lock, no write counted.
		if l, ok, err := leases.Requested(ctx, s.DB.R(), who.Principal, in.Request, sc.key, ls, in.TTL, s.now()); err != nil {
			return leases.Lease{}, err
		} else if ok {
			s.note("ISSUE", l.IssueID)
			return l, nil
		}
	}
	if id, err := leases.Next(ctx, s.DB.R(), sc.key, ls, s.now()); err != nil {
		return leases.Lease{}, err
	} else if id == "" {
		return leases.Lease{}, leases.NothingToClaim(sc.key, ls)
	}
	var l leases.Lease
	err = s.write(ctx, who, func(tx store.Tx) error {
		if in.Keyed {
			l, err = leases.AcquireNextRequest(ctx, tx, sc.key, who.Principal, in.Request, ls, in.TTL, s.now())
		} else {
			l, err = leases.AcquireNext(ctx, tx, sc.key, who.Principal, ls, in.TTL, s.now())
		}
		return err
	})
	if err != nil {
		return leases.Lease{}, err
	}
	s.note("ISSUE", l.IssueID)
	return l, nil
}
