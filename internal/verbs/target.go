package verbs

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// repo turns a client-given repository name into its key after checking
// that the principal has at least need there (an unreadable repository is
// reported as missing).
func (env *Env) repo(ctx context.Context, name string, need access.Level) (string, access.Level, error) {
	key, err := reponame.Key(name)
	if err != nil {
		return "", access.None, err
	}
	lvl, err := access.Require(ctx, env.DB.R(), env.Principal, key, need)
	return key, lvl, err
}

// target is the issue or patch a verb acts on, after the access check.
type target struct {
	key string       // the repository's key
	lvl access.Level // the principal's access there
	id  string       // the full id
}

// resolver turns an id prefix into a full id within a repository
// (issues.Resolve, issues.ResolveOpen, patches.Resolve, …).
type resolver func(ctx context.Context, q store.Querier, repo, prefix string) (string, error)

// target checks the REPO ID arguments and that the principal has need on
// REPO, then resolves ID with resolve.
func (env *Env) target(c *cli.Context, need access.Level, resolve resolver) (target, error) {
	args, err := Args(c, "repo", "id")
	if err != nil {
		return target{}, err
	}
	key, lvl, err := env.repo(c.Context, args[0], need)
	if err != nil {
		return target{}, err
	}
	id, err := resolve(c.Context, env.DB.R(), key, args[1])
	return target{key: key, lvl: lvl, id: id}, err
}

// issueTarget is target for an issue, noting its id for the journal.
func (env *Env) issueTarget(c *cli.Context, need access.Level, resolve resolver) (target, error) {
	t, err := env.target(c, need, resolve)
	if err != nil {
		return target{}, err
	}
	env.Note("ISSUE", t.id)
	return t, nil
}

// patchTarget is target for a patch.
func (env *Env) patchTarget(c *cli.Context, need access.Level) (target, error) {
	return env.target(c, need, patches.Resolve)
}

// repoArg checks the lone REPO argument and the principal's need there.
func (env *Env) repoArg(c *cli.Context, need access.Level) (string, error) {
	args, err := Args(c, "repo")
	if err != nil {
		return "", err
	}
	key, _, err := env.repo(c.Context, args[0], need)
	return key, err
}

// checkLimit refuses a --limit of a list verb outside 1 to 1000.
func checkLimit(c *cli.Context) error {
	if n := c.Int("limit"); n < 1 || n > 1000 {
		return fault.New(fault.Usage, "bad limit %d: want 1 to 1000", n)
	}
	return nil
}

// listFlags are the flags of issue list and patch list.
func listFlags(what, open, states string) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "state", Value: open, Usage: states},
		&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many (1 to 1000)"},
		&cli.StringFlag{Name: "after", Usage: "start after this " + what + " (for the next page)"},
		JSONFlag,
	}
}
