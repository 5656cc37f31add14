package verbs

import (
	"context"
	"testing"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/store"
)

// NewTestForge initialises a forge root in a temporary directory and opens
// its database for the length of the test. It is exported for the
// package's external tests (verbs_test) as well.
func NewTestForge(t *testing.T) (context.Context, forge.Root, *store.DB) {
	t.Helper()
	ctx := context.Background()
	root, err := forge.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := forge.Init(ctx, root, nil); err != nil {
		t.Fatal(err)
	}
	db, err := root.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return ctx, root, db
}
