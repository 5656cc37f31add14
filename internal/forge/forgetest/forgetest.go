// Package forgetest gives tests a fresh forge: a root initialised in a
// temporary directory with its database open. Only tests import it.
package forgetest

import (
	"context"
	"maps"
	"testing"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/pgtest"
	"github.com/collab-forge/collab/internal/store"
)

// New initialises a forge root in t's temporary directory and opens its
// database for the length of the test.
func New(t testing.TB) (context.Context, forge.Root, *store.DB) {
	t.Helper()
	return NewWith(t, nil)
}

// NewWith is New with the root's settings (url, ssh) given to init. Its
// record is on PostgreSQL where the package's tests run there
// (pgtest.Main).
func NewWith(t testing.TB, settings map[string]string) (context.Context, forge.Root, *store.DB) {
	t.Helper()
	ctx := context.Background()
	root, err := forge.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if u := pgtest.DB(t); u != "" {
		settings = maps.Clone(settings)
		if settings == nil {
			settings = map[string]string{}
		}
		settings[forge.SettingDB] = u
	}
	if err := forge.Init(ctx, root, settings); err != nil {
		t.Fatal(err)
	}
	db, err := root.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return ctx, root, db
}
