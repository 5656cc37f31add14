// Package ops is collab's use-case layer: one function per user action
// (file an issue, comment, acquire a lease, review a patch, make a token…),
// shared by every transport. Each function owns the action's input
// validation, the access decision, the resolution of ids, the lease fence,
// and the one store transaction that makes the change together with its
// event. The SSH verbs (internal/verbs) and the web (internal/web) only
// parse input, call a Service method and render its result or refusal.
//
// Refusals are fault errors; those about a client's input name the field
// (fault.Error.Field, fault.Field in the message), which each transport
// words its own way (--body on SSH, "body" in JSON).
package ops

import (
	"context"
	"log/slog"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/diff"
	"github.com/collab-forge/collab/internal/events"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ratelimit"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Input fields that refusals name (fault.Error.Field); the transports word
// each their own way.
const (
	FieldRepo       = "repo"
	FieldBody       = "body"
	FieldTitle      = "title"
	FieldLimit      = "limit"
	FieldFile       = "file"
	FieldLine       = "line"
	FieldSide       = "side"
	FieldReply      = "reply"
	FieldRevision   = "revision"
	FieldFrom       = "from"
	FieldCommit     = "commit"
	FieldLeaseToken = "lease-token"
	FieldForce      = "force"
	FieldName       = "name"
	FieldReviewer   = "reviewer"
)

// Service runs the user actions on one forge.
type Service struct {
	DB   *store.DB
	Root forge.Root
	// Now is the clock; nil means the record's (store.DB.Now).
	Now func() time.Time
	// Log records the changes an action made; nil discards.
	Log *slog.Logger
	// URL is the web UI's base URL (no trailing slash), "" when unknown:
	// patch views carry their page's URL.
	URL string
	// Note, when set, is told the journal fields (ISSUE, PATCH) an action
	// found out, even when it then refuses, for the caller's log entry.
	Note func(key string, value any)
	// BranchRules, when set, says which branches of a repository are
	// protected and how, one short line per branch (RepoHome); nil reads
	// the branch rules (RuleLine).
	BranchRules func(ctx context.Context, q store.Querier, repo string) (map[string]string, error)
	// Diffs remembers the diffs of commits and revisions read for pages;
	// nil runs git for each.
	Diffs *diff.Memo

	// rate is the principals' write budget (CountWrite); a Service is
	// used by pointer, and the zero Limiter is ready.
	rate ratelimit.Limiter
}

// Actor is who asks for an action.
type Actor struct {
	// Principal is the principal's name; access.Anonymous ("") for a
	// signed-out visitor.
	Principal string
	// OnBehalfOf, when set, is the person Principal acts for (it needs
	// the delegate capability, and the person the access the action
	// needs); Via says how the request reached it ("DM"). The record keeps
	// both beside Principal, which stays the author, holder and reviewer.
	OnBehalfOf string
	Via        string
}

// FieldOnBehalfOf and FieldVia name the on-behalf-of inputs in refusals.
const (
	FieldOnBehalfOf = "on-behalf-of"
	FieldVia        = "via"
)

// behalf is who's provenance as the record keeps it.
func (who Actor) behalf() events.Behalf { return events.For(who.OnBehalfOf, who.Via) }

// MaxVia bounds --via, as a title is bounded.
const MaxVia = 200

// checkBehalf refuses an on-behalf-of request in key's repository that
// who may not make: a malformed --via, an actor without delegate there, a
// person who is missing, disabled, the actor itself, or lacks need there.
// It returns the person's level there (None when there is no person).
func (s *Service) checkBehalf(ctx context.Context, who Actor, key string, need access.Level) (access.Level, error) {
	if who.OnBehalfOf == "" {
		if who.Via != "" {
			return access.None, fault.NewField(fault.Usage, FieldVia, "%s needs %s", fault.Field(FieldVia), fault.Field(FieldOnBehalfOf))
		}
		return access.None, nil
	}
	if who.Via != "" {
		if err := text.CheckLine(fault.Field(FieldVia), who.Via, MaxVia); err != nil {
			return access.None, fault.OnField(err, FieldVia)
		}
	}
	if !access.ValidName(who.OnBehalfOf) || who.OnBehalfOf == who.Principal {
		return access.None, fault.NewField(fault.Usage, FieldOnBehalfOf, "bad %s %q: want another principal's name", fault.Field(FieldOnBehalfOf), text.Clip(who.OnBehalfOf))
	}
	ok, err := access.MayDelegate(ctx, s.DB.R(), who.Principal, key)
	if err != nil {
		return access.None, err
	}
	if !ok {
		return access.None, fault.NewField(fault.Denied, FieldOnBehalfOf, "permission denied: %s needs the delegate grant on %s", fault.Field(FieldOnBehalfOf), reponame.Display(key))
	}
	lvl, err := access.Of(ctx, s.DB.R(), who.OnBehalfOf, key)
	if err != nil {
		return access.None, err
	}
	if lvl < max(need, access.Read) {
		return access.None, fault.NewField(fault.Denied, FieldOnBehalfOf, "permission denied: %s may not act here (%s access to %s needed; a missing or disabled principal has none)",
			who.OnBehalfOf, max(need, access.Read), reponame.Display(key))
	}
	return lvl, nil
}

// Ref names an issue or a patch as a client gives it: a repository name
// (foo, org/foo.git…) and an id or a unique prefix of one.
type Ref struct {
	Repo string
	ID   string
}

func (s *Service) now() time.Time {
	if s.Now == nil && s.DB != nil {
		return s.DB.Now().UTC() // the record's clock (several hosts agree)
	}
	if s.Now == nil {
		return time.Now().UTC()
	}
	return s.Now().UTC()
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Service) note(key string, value any) {
	if s.Note != nil {
		s.Note(key, value)
	}
}

// write runs fn as one write transaction on behalf of who. Every change a
// user action makes goes through here, whatever the transport (the SSH
// verbs, the API, the web's forms), and is counted against who's write
// rate first, in the same transaction (CountWrite).
//
// A write on someone's behalf has its events stamped with both names
// (events.Attribute).
func (s *Service) write(ctx context.Context, who Actor, fn func(tx store.Tx) error) error {
	return s.DB.Write(ctx, func(tx store.Tx) error {
		if err := s.CountWrite(ctx, tx, who.Principal); err != nil {
			return err
		}
		b := who.behalf()
		if !b.Set() {
			return fn(tx)
		}
		mark, err := events.Mark(ctx, tx)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			return err
		}
		return events.Attribute(ctx, tx, mark, b)
	})
}

// CountWrite spends one write of principal's rate limit (a token bucket in
// the database, ratelimit) inside tx, the write's own transaction: a write
// that rolls back spends nothing. An empty bucket is a fault.RateLimited
// refusal (exit 6, HTTP 429 with Retry-After). The operator (access.Local:
// admin commands, local pushes) and anonymous visitors are not counted.
// It is the one rule for every write a principal makes: write applies it
// to each use case, and Push.CountWrite to each revision proc-receive
// records.
func (s *Service) CountWrite(ctx context.Context, tx store.Tx, principal string) error {
	if principal == access.Anonymous || principal == access.Local {
		return nil
	}
	return s.rate.Take(ctx, tx, principal, s.now())
}

// scope is a repository an action runs in, after the access check.
type scope struct {
	key string       // the repository's key
	lvl access.Level // the actor's level there
	// person is the level there of whom the actor acts for, if anyone.
	person access.Level
}

// repo turns a client-given repository name into its key after checking
// that who has at least need there (an unreadable repository is reported
// as missing). Its refusals name FieldRepo, so that a transport can tell
// a malformed or inaccessible repository from other refusals.
func (s *Service) repo(ctx context.Context, who Actor, name string, need access.Level) (scope, error) {
	key, err := reponame.Key(name)
	if err != nil {
		return scope{}, fault.OnField(err, FieldRepo)
	}
	lvl, err := access.Require(ctx, s.DB.R(), who.Principal, key, need)
	if err != nil {
		return scope{}, fault.OnField(err, FieldRepo)
	}
	person, err := s.checkBehalf(ctx, who, key, need)
	if err != nil {
		return scope{}, err
	}
	return scope{key: key, lvl: lvl, person: person}, nil
}

// resolver turns an id prefix into a full id within a repository
// (issues.Resolve, issues.ResolveOpen, patches.Resolve, …).
type resolver func(ctx context.Context, q store.Querier, repo, prefix string) (string, error)

// target is the issue or patch an action runs on, after the access check.
type target struct {
	scope
	id string // the full id
}

// target checks that who has need on ref's repository, then resolves its
// id with resolve and notes it as journal field note (ISSUE, PATCH; ""
// for none).
func (s *Service) target(ctx context.Context, who Actor, ref Ref, need access.Level, resolve resolver, note string) (target, error) {
	sc, err := s.repo(ctx, who, ref.Repo, need)
	if err != nil {
		return target{}, err
	}
	id, err := resolve(ctx, s.DB.R(), sc.key, ref.ID)
	if err != nil {
		return target{}, err
	}
	if note != "" {
		s.note(note, id)
	}
	return target{scope: sc, id: id}, nil
}

// Health checks that the database answers.
func (s *Service) Health(ctx context.Context) error {
	return s.DB.Ping(ctx)
}

// listed checks a request for a page of a repository's list: its state
// filter (*state, "" meaning open) against check, its page size, and the
// actor's read access.
func (s *Service) listed(ctx context.Context, who Actor, repo string, state *string, open string, check func(string) error, limit int) (scope, error) {
	if *state == "" {
		*state = open
	}
	if err := check(*state); err != nil {
		return scope{}, err
	}
	if err := checkLimit(limit); err != nil {
		return scope{}, err
	}
	return s.repo(ctx, who, repo, access.Read)
}

// checkLimit refuses a page size outside 1 to 1000.
func checkLimit(n int) error {
	if n < 1 || n > 1000 {
		return fault.NewField(fault.Usage, FieldLimit, "bad limit %d: want 1 to 1000", n)
	}
	return nil
}
