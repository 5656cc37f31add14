// Package access decides what a principal may do in a repository. Deny by
// default: no row, no access; a public repository adds read for everyone.
package access

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/store"
)

// Level is an access level; each includes the ones below it.
type Level int

const (
	None Level = iota
	Read
	Write
	Admin
)

// Local is the principal of a push made on the server through a local path,
// without a forced command: the forge's operator, with admin rights.
const Local = "local"

// Anonymous is the empty principal: git daemon and signed-out web visitors.
const Anonymous = ""

func (l Level) String() string {
	switch l {
	case Read:
		return "read"
	case Write:
		return "write"
	case Admin:
		return "admin"
	default:
		return "none"
	}
}

// ParseLevel reads read|write|admin.
func ParseLevel(s string) (Level, error) {
	switch s {
	case "read":
		return Read, nil
	case "write":
		return Write, nil
	case "admin":
		return Admin, nil
	}
	return None, fault.New(fault.Usage, "bad access level %q: want read, write or admin", s)
}

// Of returns principal's level in the repository with key. A missing
// repository, a missing or disabled principal all give None.
func Of(ctx context.Context, q store.Querier, principal, key string) (Level, error) {
	var public bool
	err := q.QueryRowContext(ctx, "SELECT public FROM repos WHERE name = ?", key).Scan(&public)
	if errors.Is(err, sql.ErrNoRows) {
		return None, nil
	}
	if err != nil {
		return None, fmt.Errorf("read repository %s: %w", key, err)
	}
	if principal == Local {
		return Admin, nil
	}
	base := None
	if public {
		base = Read
	}
	if principal == Anonymous {
		return base, nil
	}
	var level sql.NullString
	err = q.QueryRowContext(ctx, `
		SELECT (SELECT g.level FROM grants g
		        WHERE g.principal = p.name AND g.repo IN (?, '*')
		        ORDER BY CASE g.level WHEN 'admin' THEN 3 WHEN 'write' THEN 2 ELSE 1 END DESC LIMIT 1)
		FROM principals p WHERE p.name = ? AND p.disabled = 0`, key, principal).Scan(&level)
	if errors.Is(err, sql.ErrNoRows) {
		return None, nil // no such principal, or disabled
	}
	if err != nil {
		return None, fmt.Errorf("read grants of %s: %w", principal, err)
	}
	if !level.Valid {
		return base, nil
	}
	l, err := ParseLevel(level.String)
	if err != nil {
		return None, fmt.Errorf("stored grant of %s: %w", principal, err)
	}
	return max(l, base), nil
}

// Require returns nil when principal has at least need in key's repository.
// Without read access the repository is reported exactly like a missing
// one, so that its existence is not revealed.
func Require(ctx context.Context, q store.Querier, principal, key string, need Level) (Level, error) {
	l, err := Of(ctx, q, principal, key)
	if err != nil {
		return None, err
	}
	if l < Read {
		return None, NotFound(key)
	}
	if l < need {
		return l, fault.New(fault.Denied, "permission denied: %s access to %s needed", need, reponame.Display(key))
	}
	return l, nil
}

// NotFound is the one refusal for a missing or unreadable repository.
func NotFound(key string) error {
	return fault.New(fault.NotFound, "repository %s not found", reponame.Display(key))
}
