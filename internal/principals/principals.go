// Package principals keeps the forge's principals (people and agents),
// their SSH keys and their grants, and renders the authorized_keys lines
// that bind each key to "collab-hook serve --as NAME".
package principals

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// AllRepos is the grant target meaning every repository.
const AllRepos = "*"

// Principal is a principals row.
type Principal struct {
	Name      string `json:"name"`
	Disabled  bool   `json:"disabled"`
	CreatedAt string `json:"created_at"`
	Email     string `json:"email,omitempty"`
}

// Add creates a principal.
func Add(ctx context.Context, db *store.DB, name string, now time.Time) error {
	if err := access.CheckName(name); err != nil {
		return err
	}
	return db.Write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO principals(name, created_at) VALUES (?, ?) ON CONFLICT(name) DO NOTHING`,
			name, store.FormatTime(now))
		if err != nil {
			return fmt.Errorf("add principal %s: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fault.New(fault.Conflict, "principal %s already exists", name)
		}
		return nil
	})
}

// SetDisabled disables (or enables again) a principal. A disabled principal
// can do nothing: its keys leave authorized_keys and the key index, and
// serve refuses it.
func SetDisabled(ctx context.Context, db *store.DB, name string, disabled bool) error {
	return writeKeys(ctx, db, func(tx *sql.Tx) (bool, error) {
		res, err := tx.ExecContext(ctx, `UPDATE principals SET disabled = ? WHERE name = ?`, disabled, name)
		if err != nil {
			return false, fmt.Errorf("update principal %s: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return false, noPrincipal(name)
		}
		return true, nil
	})
}

// SetEmail gives principal name the e-mail address addr (stored lowercased),
// by which it may be named as a reviewer. An address another principal
// carries is refused: it would name two people.
func SetEmail(ctx context.Context, db *store.DB, name, addr string) error {
	if !access.ValidEmail(addr) {
		return fault.NewField(fault.Usage, "email", "bad e-mail address %q: want local@domain", text.Clip(addr))
	}
	addr = strings.ToLower(addr)
	return db.Write(ctx, func(tx *sql.Tx) error {
		var other string
		err := tx.QueryRowContext(ctx, `SELECT name FROM principals WHERE email = ? AND name <> ?`, addr, name).Scan(&other)
		switch {
		case err == nil:
			return fault.New(fault.Conflict, "e-mail %s already belongs to %s", addr, other)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read e-mail %s: %w", addr, err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE principals SET email = ? WHERE name = ?`, addr, name)
		if err != nil {
			return fmt.Errorf("set e-mail of %s: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return noPrincipal(name)
		}
		return nil
	})
}

// Named returns the principal a reviewer field names: a principal name, or
// (containing "@") the e-mail address one carries, as Gerrit users type
// them.
func Named(ctx context.Context, q store.Querier, nameOrEmail string) (Principal, error) {
	if !strings.Contains(nameOrEmail, "@") {
		return Get(ctx, q, nameOrEmail)
	}
	var name string
	err := q.QueryRowContext(ctx, `SELECT name FROM principals WHERE email = ?`, strings.ToLower(nameOrEmail)).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, noPrincipal(nameOrEmail)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("read principal by e-mail: %w", err)
	}
	return Get(ctx, q, name)
}

// Reviewers returns the principal names that reviewer fields name (Named:
// a name or an e-mail address), each once, in order; a field that names
// nobody is NotFound, saying which.
func Reviewers(ctx context.Context, q store.Querier, fields []string) ([]string, error) {
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		p, err := Named(ctx, q, f)
		if fault.KindOf(err) == fault.NotFound {
			return nil, fault.New(fault.NotFound, "reviewer %s: no such user", text.Clip(f))
		}
		if err != nil {
			return nil, err
		}
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// Get returns the principal called name, or NotFound.
func Get(ctx context.Context, q store.Querier, name string) (Principal, error) {
	p := Principal{Name: name}
	var email sql.NullString
	err := q.QueryRowContext(ctx, `SELECT disabled, created_at, email FROM principals WHERE name = ?`, name).Scan(&p.Disabled, &p.CreatedAt, &email)
	p.Email = email.String
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, noPrincipal(name)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("read principal %s: %w", name, err)
	}
	return p, nil
}

// List returns every principal by name.
func List(ctx context.Context, q store.Querier) ([]Principal, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, disabled, created_at, email FROM principals ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list principals: %w", err)
	}
	defer rows.Close()
	var out []Principal
	for rows.Next() {
		var p Principal
		var email sql.NullString
		if err := rows.Scan(&p.Name, &p.Disabled, &p.CreatedAt, &email); err != nil {
			return nil, fmt.Errorf("list principals: %w", err)
		}
		p.Email = email.String
		out = append(out, p)
	}
	return out, rows.Err()
}

func noPrincipal(name string) error {
	return fault.New(fault.NotFound, "principal %s not found", text.Clip(name))
}

// Grant is one grants row.
type Grant struct {
	Principal string `json:"principal"`
	Repo      string `json:"repo"` // a repository key, or "*"
	Level     string `json:"level"`
	// Delegate: the principal may act on behalf of others there.
	Delegate bool `json:"delegate"`
}

// GrantKey resolves the REPO argument of grant and revoke: "*" or a
// repository key.
func GrantKey(repo string) (string, error) {
	if repo == AllRepos {
		return AllRepos, nil
	}
	return reponame.Key(repo)
}

// SetGrant gives principal level on repo (a key or "*"), replacing any
// earlier grant there; a delegate capability stays only with write or
// admin, which it includes. The principal and the repository must exist,
// so a typo is reported rather than stored.
func SetGrant(ctx context.Context, db *store.DB, principal, repo string, level access.Level) error {
	if level < access.Read {
		return fault.New(fault.Usage, "bad access level: want read, write or admin")
	}
	return setGrant(ctx, db, principal, repo, `INSERT INTO grants(principal, repo, level) VALUES (?1, ?2, ?3)
		ON CONFLICT(principal, repo) DO UPDATE SET level = excluded.level, delegate = CASE WHEN excluded.level <> 'read' THEN grants.delegate ELSE 0 END`, level.String())
}

// SetDelegate grants principal the delegate capability on repo (a key or
// "*"), with write access there unless it has admin already.
func SetDelegate(ctx context.Context, db *store.DB, principal, repo string) error {
	return setGrant(ctx, db, principal, repo, `INSERT INTO grants(principal, repo, level, delegate) VALUES (?1, ?2, ?3, 1)
		ON CONFLICT(principal, repo) DO UPDATE SET delegate = 1, level = CASE grants.level WHEN 'admin' THEN 'admin' ELSE excluded.level END`, access.Write.String())
}

// setGrant runs upsert (arguments principal, repo, level) once both exist.
func setGrant(ctx context.Context, db *store.DB, principal, repo, upsert, level string) error {
	return db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := Get(ctx, tx, principal); err != nil {
			return err
		}
		if repo != AllRepos {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM repos WHERE name = ?`, repo).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return access.NotFound(repo)
			}
			if err != nil {
				return fmt.Errorf("read repository %s: %w", repo, err)
			}
		}
		if _, err := tx.ExecContext(ctx, upsert, principal, repo, level); err != nil {
			return fmt.Errorf("grant %s on %s: %w", principal, repo, err)
		}
		return nil
	})
}

// Revoke removes principal's grant on repo; it reports whether there was one.
func Revoke(ctx context.Context, db *store.DB, principal, repo string) (bool, error) {
	var had bool
	err := db.Write(ctx, func(tx *sql.Tx) error {
		if _, err := Get(ctx, tx, principal); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM grants WHERE principal = ? AND repo = ?`, principal, repo)
		if err != nil {
			return fmt.Errorf("revoke %s on %s: %w", principal, repo, err)
		}
		n, _ := res.RowsAffected()
		had = n > 0
		return nil
	})
	return had, err
}

// Grants returns principal's grants by repository.
func Grants(ctx context.Context, q store.Querier, principal string) ([]Grant, error) {
	rows, err := q.QueryContext(ctx, `SELECT repo, level, delegate FROM grants WHERE principal = ? ORDER BY repo`, principal)
	if err != nil {
		return nil, fmt.Errorf("read grants of %s: %w", principal, err)
	}
	defer rows.Close()
	out := []Grant{}
	for rows.Next() {
		g := Grant{Principal: principal}
		if err := rows.Scan(&g.Repo, &g.Level, &g.Delegate); err != nil {
			return nil, fmt.Errorf("read grants of %s: %w", principal, err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// Readable is a repository a principal can read, with its level.
type Readable struct {
	repos.Repo
	Access string `json:"access"`
}

// ReadableRepos lists the repositories principal can read, by name, as
// access.Of decides: the anonymous principal reads what is public, a
// missing or disabled one reads nothing.
func ReadableRepos(ctx context.Context, q store.Querier, principal string) ([]Readable, error) {
	levels, err := access.Levels(ctx, q, principal)
	if err != nil {
		return nil, err
	}
	all, err := repos.List(ctx, q)
	if err != nil {
		return nil, err
	}
	out := []Readable{}
	for _, r := range all {
		// A repository created between the two queries is left for next time.
		if l := levels[r.Name]; l >= access.Read {
			out = append(out, Readable{Repo: r, Access: l.String()})
		}
	}
	return out, nil
}

// EnsureDisabled records name as a disabled principal inside the caller's
// transaction unless it exists (collab-hook import: the author of a record
// from another forge who has no account here). It has no keys, so the key
// index and authorized_keys do not change. created says whether it was new.
func EnsureDisabled(ctx context.Context, tx store.Querier, name string, now time.Time) (created bool, err error) {
	if err := access.CheckName(name); err != nil {
		return false, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO principals(name, disabled, created_at) VALUES (?, 1, ?) ON CONFLICT(name) DO NOTHING`,
		name, store.FormatTime(now))
	if err != nil {
		return false, fmt.Errorf("add principal %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
