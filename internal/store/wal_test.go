package store

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
)

// A reader on an old snapshot lets the WAL grow; Checkpoint cannot cut it
// back while the reader lives and says so, then truncates it to zero once
// the reader is gone.
func TestCheckpointAfterLongReader(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	raw, err := sql.Open("sqlite", "file:"+db.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	reader, err := raw.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := reader.QueryRow("SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("x", 64<<10)
	for i := 0; i < 100; i++ {
		err := db.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO events(event, repo, actor, at, data) VALUES ('x', 'r', 'a', 't', ?)", body)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	peak := walSize(t, db)
	if peak <= WALLimit {
		t.Fatalf("WAL %d bytes with a reader held: the test wrote too little", peak)
	}
	if busy, err := db.Checkpoint(ctx); err != nil || !busy {
		t.Fatalf("Checkpoint beside the reader = %v, %v; want busy", busy, err)
	}
	if err := reader.Rollback(); err != nil {
		t.Fatal(err)
	}
	if busy, err := db.Checkpoint(ctx); err != nil || busy {
		t.Fatalf("Checkpoint after the reader = %v, %v", busy, err)
	}
	if got := walSize(t, db); got != 0 {
		t.Fatalf("WAL %d bytes after the checkpoint (peak %d), want 0", got, peak)
	}
	t.Logf("WAL peak %d bytes, 0 after the checkpoint", peak)
}

func walSize(t *testing.T, db *DB) int64 {
	t.Helper()
	fi, err := os.Stat(db.WALPath())
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
