package store

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
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

// A damaged database is said to be one, with what to run, by reads and
// writes alike, and QuickCheck finds it.
func TestDamaged(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	if bad, err := db.QuickCheck(ctx); err != nil || len(bad) != 0 {
		t.Fatalf("a sound database: %q, %v", bad, err)
	}
	body := strings.Repeat("x", 2000)
	for i := 0; i < 200; i++ {
		err := db.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.Exec("INSERT INTO events(event, repo, actor, at, data) VALUES ('issue.filed', 'demo.git', 'ada', '2026-01-01T00:00:00.000Z', ?)", body)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Overwrite frames in the middle of the -wal file under the live
	// database, whose index still says they hold the table's pages.
	wal := db.Path() + "-wal"
	if st, err := os.Stat(wal); err != nil || st.Size() < 512<<10 {
		t.Fatalf("the WAL is too small to damage in its middle: %v", err)
	}
	f, err := os.OpenFile(wal, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := []byte(strings.Repeat("\xff", 64<<10))
	if _, err := f.WriteAt(junk, 256<<10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var n int
	err = db.R().QueryRowContext(ctx, "SELECT sum(length(data)) FROM events").Scan(&n)
	if err == nil {
		t.Fatal("a read of a damaged table succeeded")
	}
	if msg := fault.Public(Damaged(err)); !strings.Contains(msg, "the forge database is damaged") || !strings.Contains(msg, "collab-hook fsck") {
		t.Errorf("a read says %q", msg)
	}
	if bad, err := db.QuickCheck(ctx); err != nil || len(bad) == 0 {
		t.Errorf("QuickCheck of a damaged database: %q, %v", bad, err)
	}
	if d := Damaged(os.ErrNotExist); d != os.ErrNotExist {
		t.Errorf("Damaged changed another error: %v", d)
	}
}
