package ops

import (
	"context"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/issues"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/tokens"
)

// anonymousRefused refuses what only a principal can own.
func anonymousRefused(who Actor) error {
	if who.Principal == access.Anonymous {
		return fault.New(fault.Denied, "tokens belong to a principal; anonymous callers have none")
	}
	if who.OnBehalfOf != "" {
		return fault.NewField(fault.Usage, FieldOnBehalfOf, "%s is for a repository's records; tokens are the caller's own", fault.Field(FieldOnBehalfOf))
	}
	return nil
}

// NewToken makes a bearer token for the actor; an empty name gets a
// generated one. The secret is in the result only.
// ttl is the lifetime asked for (0: the forge's default, if any), within
// the forge's maximum (tokens.TTL).
func (s *Service) NewToken(ctx context.Context, who Actor, name string, ttl time.Duration) (tokens.Token, error) {
	if err := anonymousRefused(who); err != nil {
		return tokens.Token{}, err
	}
	var t tokens.Token
	err := s.write(ctx, who, func(tx store.Tx) error {
		settings, err := store.ReadSettings(ctx, tx)
		if err != nil {
			return err
		}
		life, err := tokens.TTL(ttl, settings)
		if err != nil {
			return err
		}
		t, err = tokens.New(ctx, tx, who.Principal, name, s.now(), life)
		return err
	})
	return t, err
}

// Tokens lists the actor's tokens, without secrets.
func (s *Service) Tokens(ctx context.Context, who Actor) ([]tokens.Token, error) {
	if err := anonymousRefused(who); err != nil {
		return nil, err
	}
	return tokens.List(ctx, s.DB.R(), who.Principal)
}

// RevokeToken revokes the actor's token name and the sessions made from it.
func (s *Service) RevokeToken(ctx context.Context, who Actor, name string) error {
	if err := anonymousRefused(who); err != nil {
		return err
	}
	return s.write(ctx, who, func(tx store.Tx) error {
		return tokens.Revoke(ctx, tx, who.Principal, name)
	})
}

// Authenticate returns the principal a bearer secret belongs to.
func (s *Service) Authenticate(ctx context.Context, secret string) (string, error) {
	return tokens.Authenticate(ctx, s.DB, secret, s.now())
}

// Session returns the web session of a cookie.
func (s *Service) Session(ctx context.Context, cookie string) (tokens.Session, error) {
	return tokens.LookupSession(ctx, s.DB.R(), cookie, s.now())
}

// SignIn makes a web session from a token's secret and returns its cookie.
func (s *Service) SignIn(ctx context.Context, secret string) (string, tokens.Session, error) {
	return tokens.Login(ctx, s.DB, secret, s.now())
}

// SignOut ends the web session of a cookie.
func (s *Service) SignOut(ctx context.Context, cookie string) error {
	return tokens.Logout(ctx, s.DB, cookie)
}

// Whoami is the actor and its grants.
type Whoami struct {
	Principal string             `json:"principal"`
	Grants    []principals.Grant `json:"grants"`
}

// Whoami reads the actor's grants.
func (s *Service) Whoami(ctx context.Context, who Actor) (Whoami, error) {
	gs, err := principals.Grants(ctx, s.DB.R(), who.Principal)
	return Whoami{Principal: who.Principal, Grants: gs}, err
}

// Repos lists the repositories the actor can read, with its access.
func (s *Service) Repos(ctx context.Context, who Actor) ([]principals.Readable, error) {
	return principals.ReadableRepos(ctx, s.DB.R(), who.Principal)
}

// Repo reads one repository the actor can read.
func (s *Service) Repo(ctx context.Context, who Actor, name string) (repos.Repo, error) {
	sc, err := s.repo(ctx, who, name, access.Read)
	if err != nil {
		return repos.Repo{}, err
	}
	return repos.Get(ctx, s.DB.R(), sc.key)
}

// Events reads the event log of the repositories the actor can read,
// oldest first, after event id after.
func (s *Service) Events(ctx context.Context, who Actor, after int64, limit int) ([]events.Event, error) {
	list, err := s.Repos(ctx, who)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, rp := range list {
		names[i] = rp.Name
	}
	return events.List(ctx, s.DB.R(), after, names, limit)
}

// Found is what a cross-reference REPO#PREFIX names.
type Found struct {
	Repo string // the repository's key
	Kind string // "issue" or "patch"
	ID   string
}

// FindRef resolves a cross-reference: to what it named when it was
// written, if a body resolved it then (issues.Resolved), else an issue of
// the repository first, else a patch.
func (s *Service) FindRef(ctx context.Context, who Actor, ref Ref) (Found, error) {
	sc, err := s.repo(ctx, who, ref.Repo, access.Read)
	if err != nil {
		return Found{}, err
	}
	if p, err := ids.CheckPrefix(ref.ID); err == nil {
		kind, id, err := issues.Resolved(ctx, s.DB.R(), sc.key, p)
		if err != nil {
			return Found{}, err
		}
		if id != "" {
			return Found{Repo: sc.key, Kind: kind, ID: id}, nil
		}
	}
	id, ierr := issues.Resolve(ctx, s.DB.R(), sc.key, ref.ID)
	if ierr == nil {
		return Found{Repo: sc.key, Kind: "issue", ID: id}, nil
	}
	pid, perr := patches.Resolve(ctx, s.DB.R(), sc.key, ref.ID)
	if perr == nil {
		return Found{Repo: sc.key, Kind: "patch", ID: pid}, nil
	}
	if fault.KindOf(ierr) != fault.NotFound {
		return Found{}, ierr
	}
	return Found{}, perr
}
