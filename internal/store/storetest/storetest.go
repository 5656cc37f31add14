// Package storetest opens a new empty store for a test: on PostgreSQL
// when the package's tests run under pgtest.Main with
// COLLAB_TEST_STORE=postgres (make test runs the store-aware packages so,
// after their SQLite run), else an SQLite file in the test's directory.
package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/collab-forge/collab/internal/pgtest"
	"github.com/collab-forge/collab/internal/store"
)

// Loc is where a new empty store lives: a PostgreSQL URL or a file path.
func Loc(t testing.TB) string {
	t.Helper()
	if u := pgtest.DB(t); u != "" {
		return u
	}
	return filepath.Join(t.TempDir(), "collab.db")
}

// Open opens a new empty store, closed when the test ends.
func Open(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), Loc(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
