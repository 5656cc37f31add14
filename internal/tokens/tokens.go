// Package tokens keeps the bearer tokens of the HTTP API and the web
// sessions made from them. Only SHA-256 hashes of secrets are stored, so a
// copy of the database hands out no credentials.
//
// collab-hook links this package (the token verbs), so it must not import
// net/http or other web packages.
package tokens

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/ids"
	"github.com/collab-forge/collab/internal/leases"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Prefix marks collab secrets, so that secret scanners and people can tell
// them apart from other credentials.
const Prefix = "collab_"

// touchEvery bounds how often a token's last-used time is written: a busy
// agent must not turn every read into a write transaction.
const touchEvery = time.Minute

// Token is a stored token; the secret itself is only known at creation.
type Token struct {
	// Token is the secret; it is set only by New.
	Token      string      `json:"token,omitempty"`
	Name       string      `json:"name"`
	Principal  string      `json:"principal"`
	CreatedAt  store.Time  `json:"created_at"`
	LastUsedAt *store.Time `json:"last_used_at"`
	// ExpiresAt is when the token stops working; nil: never.
	ExpiresAt *store.Time `json:"expires_at"`
}

// The settings that bound a token's lifetime: the TTL of a token made
// without --ttl, and the longest any may have. Unset: none.
const (
	SettingTTLDefault = "token_ttl_default"
	SettingTTLMax     = "token_ttl_max"
)

// ParseTTL reads a token TTL (the --ttl flag, or the setting what): a Go
// duration within the contract's bounds for every TTL, a lease's too.
func ParseTTL(what, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < leases.MinTTL || d > leases.MaxTTL {
		return 0, fault.New(fault.Usage, "bad %s %q: want a duration from 1s to 720h, e.g. 24h", what, text.Clip(s))
	}
	return d, nil
}

// TTL is the lifetime of a token asked for with requested (0: none asked)
// under the settings: the default where none was asked, the maximum where
// neither gives one; a request over the maximum is refused. 0: it never
// expires.
func TTL(requested time.Duration, settings map[string]string) (time.Duration, error) {
	var def, max time.Duration
	var err error
	if v := settings[SettingTTLDefault]; v != "" {
		if def, err = ParseTTL(SettingTTLDefault, v); err != nil {
			return 0, err
		}
	}
	if v := settings[SettingTTLMax]; v != "" {
		if max, err = ParseTTL(SettingTTLMax, v); err != nil {
			return 0, err
		}
	}
	ttl := requested
	if ttl == 0 {
		ttl = def
	}
	switch {
	case max == 0:
	case requested > max:
		return 0, fault.NewField(fault.Usage, "ttl", "%s %s is over this forge's maximum of %s (%s)", fault.Field("ttl"), requested, max, SettingTTLMax)
	case ttl == 0 || ttl > max:
		ttl = max
	}
	return ttl, nil
}

// Hash is the stored form of a secret.
func Hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

func randomSecret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// CheckName validates a token name.
func CheckName(name string) error {
	if !access.ValidName(name) {
		return fault.New(fault.Usage, "bad token name %q: want [a-z0-9][a-z0-9._-]{0,63}", text.Clip(name))
	}
	return nil
}

// New makes a token for principal inside the caller's write transaction.
// An empty name gets a generated one. The returned Token carries the
// secret, which is never stored.
// A ttl above 0 makes it expire that long after now.
func New(ctx context.Context, tx store.Querier, principal, name string, now time.Time, ttl time.Duration) (Token, error) {
	if name == "" {
		name = "token-" + ids.New()[:8]
	}
	if err := CheckName(name); err != nil {
		return Token{}, err
	}
	t := Token{Token: Prefix + randomSecret(32), Name: name, Principal: principal, CreatedAt: store.At(now)}
	var expires sql.NullString
	if ttl > 0 {
		at := store.At(now.Add(ttl))
		t.ExpiresAt = &at
		expires = sql.NullString{String: store.FormatTime(now.Add(ttl)), Valid: true}
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM tokens WHERE principal = ? AND name = ?", principal, name).Scan(&n); err != nil {
		return Token{}, fmt.Errorf("check token name: %w", err)
	}
	if n > 0 {
		return Token{}, fault.NewField(fault.Conflict, "name", "a token named %s already exists; revoke it first or pick another %s", name, fault.Field("name"))
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO tokens(principal, name, hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
		principal, name, Hash(t.Token), t.CreatedAt, expires); err != nil {
		return Token{}, fmt.Errorf("store token: %w", err)
	}
	return t, nil
}

// List returns principal's tokens by name, without secrets.
func List(ctx context.Context, q store.Querier, principal string) ([]Token, error) {
	rows, err := q.QueryContext(ctx,
		"SELECT name, principal, created_at, last_used_at, expires_at FROM tokens WHERE principal = ? ORDER BY name", principal)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		var t Token
		var used, expires sql.NullString
		err := rows.Scan(&t.Name, &t.Principal, &t.CreatedAt, &used, &expires)
		if err == nil {
			t.LastUsedAt, err = store.NullTime(used)
		}
		if err == nil {
			t.ExpiresAt, err = store.NullTime(expires)
		}
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Revoke deletes principal's token name inside the caller's write
// transaction, and the web sessions made from it die with it (sessions
// remember their token).
func Revoke(ctx context.Context, tx store.Querier, principal, name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM tokens WHERE principal = ? AND name = ?", principal, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fault.New(fault.NotFound, "no token named %s", name)
	}
	if err != nil {
		return fmt.Errorf("find token: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE token_id = ?", id); err != nil {
		return fmt.Errorf("end sessions of token: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM tokens WHERE id = ?", id); err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}

// Authenticate returns the principal a bearer secret belongs to. An unknown
// secret, or one of a disabled or deleted principal, is Unauthenticated.
//
// The last-used time is refreshed at most once a minute, and only when the
// writer lock is free at that moment: a read must never queue behind
// writers, nor fail because the database is busy, the disk full or the
// root read-only. A skipped refresh is tried again at the next use.
func Authenticate(ctx context.Context, db *store.DB, secret string, now time.Time) (string, error) {
	id, principal, used, _, err := lookup(ctx, db.R(), secret, now)
	if err != nil {
		return "", err
	}
	if used.Valid {
		if t, err := store.ParseTime(used.String); err == nil && now.Sub(t) < touchEvery {
			return principal, nil
		}
	}
	err = db.TryWrite(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE tokens SET last_used_at = ? WHERE id = ?", store.FormatTime(now), id)
		return err
	})
	if err != nil && fault.KindOf(err) != fault.Unavailable {
		return "", fmt.Errorf("touch token: %w", err)
	}
	return principal, nil
}

// lookup finds the live token of secret: an unknown one, one that
// expired, or one of a disabled or deleted principal is the same "bad
// token". expires is when it stops working (zero: never).
func lookup(ctx context.Context, q store.Querier, secret string, now time.Time) (id int64, principal string, used sql.NullString, expires time.Time, err error) {
	var hash string
	var exp sql.NullString
	bad := fault.New(fault.Unauthenticated, "bad token")
	if !strings.HasPrefix(secret, Prefix) || len(secret) > 200 {
		return 0, "", used, expires, bad
	}
	want := Hash(secret)
	err = q.QueryRowContext(ctx, `SELECT t.id, t.principal, t.hash, t.last_used_at, t.expires_at FROM tokens t
		JOIN principals p ON p.name = t.principal AND p.disabled = 0
		WHERE t.hash = ?`, want).Scan(&id, &principal, &hash, &used, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", used, expires, bad
	}
	if err != nil {
		return 0, "", used, expires, fmt.Errorf("look up token: %w", err)
	}
	// The index lookup is by hash; compare in constant time anyway.
	if subtle.ConstantTimeCompare([]byte(hash), []byte(want)) != 1 {
		return 0, "", used, expires, bad
	}
	if exp.Valid {
		if expires, err = store.ParseTime(exp.String); err != nil {
			return 0, "", used, expires, fmt.Errorf("look up token: %w", err)
		}
		if !now.Before(expires) {
			return 0, "", used, expires, bad
		}
	}
	return id, principal, used, expires, nil
}

// Session is a signed-in browser.
type Session struct {
	Principal string
	// CSRF is the token every form of this session must carry.
	CSRF string
}

// SessionTTL is how long a web session lasts.
const SessionTTL = 7 * 24 * time.Hour

// Login checks a bearer secret and opens a session for its principal. It
// returns the cookie value (only its hash is stored) and the session.
func Login(ctx context.Context, db *store.DB, secret string, now time.Time) (string, Session, error) {
	id, principal, _, expires, err := lookup(ctx, db.R(), strings.TrimSpace(secret), now)
	if err != nil {
		return "", Session{}, err
	}
	// A session ends with its token.
	end := now.Add(SessionTTL)
	if !expires.IsZero() && expires.Before(end) {
		end = expires
	}
	cookie := randomSecret(32)
	s := Session{Principal: principal, CSRF: randomSecret(24)}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		// Expired sessions are cleared here rather than by a sweeper.
		if _, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE expires_at < ?", store.FormatTime(now)); err != nil {
			return fmt.Errorf("clear old sessions: %w", err)
		}
		// The token was checked before this transaction; a Revoke in
		// between must not leave a session behind that outlives it.
		res, err := tx.ExecContext(ctx, "UPDATE tokens SET last_used_at = ? WHERE id = ?", store.FormatTime(now), id)
		if err != nil {
			return fmt.Errorf("touch token: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("touch token: %w", err)
		} else if n == 0 {
			return fault.New(fault.Unauthenticated, "bad token")
		}
		_, err = tx.ExecContext(ctx,
			"INSERT INTO sessions(hash, principal, csrf, token_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
			Hash(cookie), principal, s.CSRF, id, store.FormatTime(now), store.FormatTime(end))
		if err != nil {
			return fmt.Errorf("store session: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", Session{}, err
	}
	return cookie, s, nil
}

// LookupSession returns the live session of a cookie value. A missing,
// expired or revoked session, or one of a disabled principal, is
// Unauthenticated.
func LookupSession(ctx context.Context, q store.Querier, cookie string, now time.Time) (Session, error) {
	var s Session
	if cookie == "" || len(cookie) > 200 {
		return s, fault.New(fault.Unauthenticated, "not signed in")
	}
	err := q.QueryRowContext(ctx, `SELECT s.principal, s.csrf FROM sessions s
		JOIN principals p ON p.name = s.principal AND p.disabled = 0
		WHERE s.hash = ? AND s.expires_at > ?`, Hash(cookie), store.FormatTime(now)).Scan(&s.Principal, &s.CSRF)
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, fault.New(fault.Unauthenticated, "not signed in")
	}
	if err != nil {
		return Session{}, fmt.Errorf("look up session: %w", err)
	}
	return s, nil
}

// Logout ends the session of a cookie value; an unknown one is no error.
func Logout(ctx context.Context, db *store.DB, cookie string) error {
	return db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM sessions WHERE hash = ?", Hash(cookie))
		return err
	})
}

// CSRFEqual compares a form's CSRF token with the session's in constant time.
func CSRFEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
