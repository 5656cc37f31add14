package tokens

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store/storetest"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/store"
)

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), storetest.Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, p := range []string{"alice", "bob"} {
		if _, err := db.R().Exec("INSERT INTO principals(name, created_at) VALUES (?, '2026-01-01T00:00:00.000Z')", p); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func TestNewListRevoke(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		who, name string
		kind      fault.Kind // Internal: success
	}{
		{"alice", "ci", fault.Internal},
		{"alice", "", fault.Internal},
		{"alice", "ci", fault.Conflict},
		{"bob", "ci", fault.Internal},
		{"alice", "Bad Name", fault.Usage},
		{"alice", "-x", fault.Usage},
		{"alice", strings.Repeat("a", 65), fault.Usage},
	}
	for _, tt := range tests {
		tk, err := newToken(ctx, db, tt.who, tt.name, now)
		if tt.kind != fault.Internal {
			if fault.KindOf(err) != tt.kind {
				t.Errorf("New(%s, %q) = %v, want kind %d", tt.who, tt.name, err, tt.kind)
			}
			continue
		}
		if err != nil {
			t.Fatalf("New(%s, %q): %v", tt.who, tt.name, err)
		}
		if !strings.HasPrefix(tk.Token, Prefix) || len(tk.Token) < 40 || tk.Name == "" {
			t.Errorf("New(%s, %q) = %+v", tt.who, tt.name, tk)
		}
	}
	list, err := List(ctx, db.R(), "alice")
	if err != nil || len(list) != 2 || list[0].Token != "" {
		t.Fatalf("List(alice) = %+v, %v", list, err)
	}
	var stored int
	db.R().QueryRow("SELECT count(*) FROM tokens WHERE hash LIKE 'collab_%'").Scan(&stored)
	if stored != 0 {
		t.Fatalf("a secret is stored in clear")
	}
	if err := revoke(ctx, db, "alice", "nope"); fault.KindOf(err) != fault.NotFound {
		t.Fatalf("Revoke unknown: %v", err)
	}
	if err := revoke(ctx, db, "alice", "ci"); err != nil {
		t.Fatal(err)
	}
	if list, _ := List(ctx, db.R(), "bob"); len(list) != 1 {
		t.Fatalf("revoking alice's ci touched bob's: %+v", list)
	}
}

func TestAuthenticateAndSessions(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tk, err := newToken(ctx, db, "alice", "web", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "collab_", "collab_nope", "x" + tk.Token, tk.Token[:len(tk.Token)-1]} {
		if _, err := Authenticate(ctx, db, bad, now); fault.KindOf(err) != fault.Unauthenticated {
			t.Errorf("Authenticate(%q) = %v", bad, err)
		}
	}
	p, err := Authenticate(ctx, db, tk.Token, now)
	if err != nil || p != "alice" {
		t.Fatalf("Authenticate = %q, %v", p, err)
	}
	list, _ := List(ctx, db.R(), "alice")
	if list[0].LastUsedAt == nil || list[0].LastUsedAt.String() != store.FormatTime(now) {
		t.Fatalf("last used not recorded: %+v", list[0])
	}

	cookie, sess, err := Login(ctx, db, " "+tk.Token+"\n", now)
	if err != nil || sess.Principal != "alice" || sess.CSRF == "" {
		t.Fatalf("Login = %+v, %v", sess, err)
	}
	got, err := LookupSession(ctx, db.R(), cookie, now.Add(time.Hour))
	if err != nil || got != sess {
		t.Fatalf("LookupSession = %+v, %v", got, err)
	}
	if _, err := LookupSession(ctx, db.R(), cookie, now.Add(SessionTTL+time.Second)); fault.KindOf(err) != fault.Unauthenticated {
		t.Fatalf("expired session: %v", err)
	}
	if !CSRFEqual(sess.CSRF, got.CSRF) || CSRFEqual("", "") || CSRFEqual(sess.CSRF, sess.CSRF+"x") {
		t.Fatalf("CSRFEqual")
	}

	// Disabling the principal stops its token and its sessions.
	db.R().Exec("UPDATE principals SET disabled = 1 WHERE name = 'alice'")
	if _, err := Authenticate(ctx, db, tk.Token, now); fault.KindOf(err) != fault.Unauthenticated {
		t.Fatalf("disabled principal's token: %v", err)
	}
	if _, err := LookupSession(ctx, db.R(), cookie, now); fault.KindOf(err) != fault.Unauthenticated {
		t.Fatalf("disabled principal's session: %v", err)
	}
	db.R().Exec("UPDATE principals SET disabled = 0 WHERE name = 'alice'")

	// Revoking the token signs its browsers out; logout ends one session.
	if err := revoke(ctx, db, "alice", "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := LookupSession(ctx, db.R(), cookie, now); fault.KindOf(err) != fault.Unauthenticated {
		t.Fatalf("session of a revoked token: %v", err)
	}
	tk2, _ := newToken(ctx, db, "alice", "web2", now)
	c2, _, err := Login(ctx, db, tk2.Token, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := Logout(ctx, db, c2); err != nil {
		t.Fatal(err)
	}
	if _, err := LookupSession(ctx, db.R(), c2, now); fault.KindOf(err) != fault.Unauthenticated {
		t.Fatalf("session after logout: %v", err)
	}
}

// newToken is New in a transaction of its own.
func newToken(ctx context.Context, db *store.DB, who, name string, now time.Time) (Token, error) {
	return newTokenTTL(ctx, db, who, name, now, 0)
}

func newTokenTTL(ctx context.Context, db *store.DB, who, name string, now time.Time, ttl time.Duration) (Token, error) {
	var t Token
	err := db.Write(ctx, func(tx *sql.Tx) error {
		var err error
		t, err = New(ctx, tx, who, name, now, ttl)
		return err
	})
	return t, err
}

// A token with a lifetime works until it ends and is then answered like
// a revoked one; a session made from it ends with it.
func TestExpiry(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tk, err := newTokenTTL(ctx, db, "alice", "ci", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if tk.ExpiresAt == nil || tk.ExpiresAt.String() != store.FormatTime(now.Add(time.Hour)) {
		t.Fatalf("ExpiresAt = %v", tk.ExpiresAt)
	}
	if list, _ := List(ctx, db.R(), "alice"); len(list) != 1 || list[0].ExpiresAt == nil || *list[0].ExpiresAt != *tk.ExpiresAt {
		t.Fatalf("List = %+v", list)
	}
	if p, err := Authenticate(ctx, db, tk.Token, now.Add(time.Hour-time.Millisecond)); err != nil || p != "alice" {
		t.Fatalf("before expiry: %q, %v", p, err)
	}
	cookie, _, err := Login(ctx, db, tk.Token, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{now.Add(time.Hour), now.Add(2 * time.Hour)} {
		_, err := Authenticate(ctx, db, tk.Token, at)
		if fault.KindOf(err) != fault.Unauthenticated || fault.As(err).Msg != "bad token" {
			t.Errorf("at %v: %v, want the answer a revoked token gets", at, err)
		}
		if _, _, err := Login(ctx, db, tk.Token, at); fault.KindOf(err) != fault.Unauthenticated {
			t.Errorf("login at %v: %v", at, err)
		}
		if _, err := LookupSession(ctx, db.R(), cookie, at); fault.KindOf(err) != fault.Unauthenticated {
			t.Errorf("session at %v outlives its token: %v", at, err)
		}
	}
}

func TestTTL(t *testing.T) {
	for _, tc := range []struct {
		name      string
		requested time.Duration
		settings  map[string]string
		want      time.Duration
		bad       bool
	}{
		{"none", 0, nil, 0, false},
		{"asked", time.Hour, nil, time.Hour, false},
		{"default", 0, map[string]string{SettingTTLDefault: "24h"}, 24 * time.Hour, false},
		{"asked over the default", 48 * time.Hour, map[string]string{SettingTTLDefault: "24h"}, 48 * time.Hour, false},
		{"max bounds none asked", 0, map[string]string{SettingTTLMax: "72h"}, 72 * time.Hour, false},
		{"max bounds the default", 0, map[string]string{SettingTTLDefault: "100h", SettingTTLMax: "72h"}, 72 * time.Hour, false},
		{"asked within max", time.Hour, map[string]string{SettingTTLMax: "72h"}, time.Hour, false},
		{"asked over max", 73 * time.Hour, map[string]string{SettingTTLMax: "72h"}, 0, true},
		{"bad setting", 0, map[string]string{SettingTTLMax: "forever"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TTL(tc.requested, tc.settings)
			if (err != nil) != tc.bad || got != tc.want {
				t.Fatalf("TTL = %v, %v; want %v (error: %v)", got, err, tc.want, tc.bad)
			}
			if err != nil && fault.KindOf(err) != fault.Usage {
				t.Errorf("a refusal of kind %v, want usage", fault.KindOf(err))
			}
		})
	}
	for _, s := range []string{"0s", "-1h", "721h", "1ms", "soon"} {
		if _, err := ParseTTL("ttl", s); fault.KindOf(err) != fault.Usage {
			t.Errorf("ParseTTL(%q) = %v", s, err)
		}
	}
}

// revoke is Revoke in a transaction of its own.
func revoke(ctx context.Context, db *store.DB, who, name string) error {
	return db.Write(ctx, func(tx *sql.Tx) error { return Revoke(ctx, tx, who, name) })
}
