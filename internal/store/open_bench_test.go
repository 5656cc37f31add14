package store

import (
	"context"
	"path/filepath"
	"testing"
)

// BenchmarkOpenShort is what a hook or serve pays for the database before
// its first query: open, the schema check and the first statement, then
// close, with another connection holding the file open (as collab-web
// does), so the close does not checkpoint.
func BenchmarkOpenShort(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "collab.db")
	held, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer held.Close()
	if err := held.Ping(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		db, err := OpenShort(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		var n int
		if err := db.R().QueryRowContext(ctx, "SELECT count(*) FROM repos").Scan(&n); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}
