// Package forgetest gives tests a fresh forge: a root initialised in a
// temporary directory with its database open. Only tests import it.
package forgetest

import (
	"context"
	"testing"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/store"
)

// New initialises a forge root in t's temporary directory and opens its
// database for the length of the test.
func New(t testing.TB) (context.Context, forge.Root, *store.DB) {
	t.Helper()
	return NewWith(t, nil)
}

// NewWith is New with the root's settings (url, ssh) given to init.
func NewWith(t testing.TB, settings map[string]string) (context.Context, forge.Root, *store.DB) {
	t.Helper()
	ctx := context.Background()
	root, err := forge.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
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
