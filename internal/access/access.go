// Package access decides what a principal may do in a repository. Deny by
// default: no row, no access; a public repository adds read for everyone.
package access

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/text"
)

// Querier is what access reads through: store.Querier's reading half,
// declared here so that access links no SQLite driver: the packages of
// serve's hand-off (hookenv, pushcheck) link it for its levels and names
// alone.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

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

// Unknown is whom the merge scan credits with a merge when it cannot tell
// who pushed it (a scan made up later, with no reflog entry naming a
// principal).
const Unknown = "unknown"

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

// ValidName reports whether name matches [a-z0-9][a-z0-9._-]{0,63}, the
// rule for principal and token names. It is a loop rather than a regexp
// because a regexp compiled at start-up costs every hook process.
func ValidName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ValidEmail reports whether addr is an e-mail address a principal may
// carry: local@domain in printable ASCII, no spaces or quotes, at most 254
// bytes (RFC 5321's path limit). Deliberately narrower than RFC 5322: the
// address is matched, never mailed, and is printed in lines and pages.
func ValidEmail(addr string) bool {
	if len(addr) < 3 || len(addr) > 254 || strings.HasPrefix(addr, "-") {
		return false
	}
	local, domain, ok := strings.Cut(addr, "@")
	if !ok || local == "" || domain == "" || strings.Contains(domain, "@") {
		return false
	}
	for i := 0; i < len(addr); i++ {
		if c := addr[i]; c <= ' ' || c >= 0x7f || strings.IndexByte("\"'`\\<>()[],;:", c) >= 0 {
			return false
		}
	}
	return true
}

// CheckName refuses a name that is not a valid principal name, or one of
// the names the forge itself uses for pushers (Local, Unknown).
func CheckName(name string) error {
	if !ValidName(name) {
		return fault.New(fault.Usage, "bad principal name %q: want [a-z0-9][a-z0-9._-]{0,63}", text.Clip(name))
	}
	if name == Local {
		return fault.New(fault.Usage, "principal name %q is reserved for pushes made on the server", name)
	}
	if name == Unknown {
		return fault.New(fault.Usage, "principal name %q is reserved for merges whose pusher is not known", name)
	}
	return nil
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

// levelQuery reads, per repository, what principal's level there depends
// on: whether it is public, whether the principal exists and is enabled,
// and its highest grant on the repository or on '*'. Its arguments are the
// principal twice.
const levelQuery = `
	SELECT r.name, r.public,
		EXISTS (SELECT 1 FROM principals p WHERE p.name = ? AND p.disabled = 0),
		(SELECT g.level FROM grants g
		 WHERE g.principal = ? AND g.repo IN (r.name, '*')
		 ORDER BY CASE g.level WHEN 'admin' THEN 3 WHEN 'write' THEN 2 ELSE 1 END DESC LIMIT 1)
	FROM repos r`

// Of returns principal's level in the repository with key. A missing
// repository, a missing or disabled principal all give None.
func Of(ctx context.Context, q Querier, principal, key string) (Level, error) {
	var (
		name            string
		public, enabled bool
		grant           sql.NullString
	)
	err := q.QueryRowContext(ctx, levelQuery+" WHERE r.name = ?", principal, principal, key).
		Scan(&name, &public, &enabled, &grant)
	if errors.Is(err, sql.ErrNoRows) {
		return None, nil
	}
	if err != nil {
		return None, fmt.Errorf("read access of %s to %s: %w", principal, key, err)
	}
	return level(principal, public, enabled, grant)
}

// Levels returns principal's level in every repository, by key: what Of
// gives for each, in one query however many repositories there are.
func Levels(ctx context.Context, q Querier, principal string) (map[string]Level, error) {
	rows, err := q.QueryContext(ctx, levelQuery, principal, principal)
	if err != nil {
		return nil, fmt.Errorf("read access of %s: %w", principal, err)
	}
	defer rows.Close()
	out := map[string]Level{}
	for rows.Next() {
		var (
			name            string
			public, enabled bool
			grant           sql.NullString
		)
		if err := rows.Scan(&name, &public, &enabled, &grant); err != nil {
			return nil, fmt.Errorf("read access of %s: %w", principal, err)
		}
		if out[name], err = level(principal, public, enabled, grant); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read access of %s: %w", principal, err)
	}
	return out, nil
}

// level is the rule: the local operator is admin everywhere; a public
// repository is readable by anonymous and by every enabled principal; a
// missing or disabled principal gets nothing; otherwise the highest grant.
func level(principal string, public, enabled bool, grant sql.NullString) (Level, error) {
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
	if !enabled {
		return None, nil
	}
	if !grant.Valid {
		return base, nil
	}
	l, err := ParseLevel(grant.String)
	if err != nil {
		return None, fmt.Errorf("stored grant of %s: %w", principal, err)
	}
	return max(l, base), nil
}

// Require returns nil when principal has at least need in key's repository.
// Without read access the repository is reported exactly like a missing
// one, so that its existence is not revealed.
func Require(ctx context.Context, q Querier, principal, key string, need Level) (Level, error) {
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

// Delegate is the capability to act on behalf of others (CONTRACT.md
// "Writes may carry --on-behalf-of"): granted on its own
// (`grant NAME REPO delegate`), never implied by a level.
const Delegate = "delegate"

// MayDelegate reports whether principal, enabled, holds delegate on key's
// repository or on every one.
func MayDelegate(ctx context.Context, q Querier, principal, key string) (bool, error) {
	var ok bool
	err := q.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM grants g JOIN principals p ON p.name = g.principal
		WHERE g.principal = ? AND g.repo IN (?, '*') AND g.delegate = 1 AND p.disabled = 0)`, principal, key).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("read delegation of %s to %s: %w", principal, key, err)
	}
	return ok, nil
}
