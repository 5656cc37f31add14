package events

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/store/storetest"
)

// TestIDsInCommitOrder: an event whose transaction commits late never
// has a lower id than one a reader has already passed. Writer A emits and
// holds its transaction open; writer B emits meanwhile; a reader reads
// past its cursor while A is still open, then after both commit. With ids
// taken at insert (a plain sequence) B would commit id 2 first, the reader
// would move its cursor past it, and A's id 1 would never be read. On
// SQLite one writer at a time makes this so; on PostgreSQL the events
// table's trigger (schema.postgres.sql) does.
func TestIDsInCommitOrder(t *testing.T) {
	db := storetest.Open(t)
	if !db.Postgres() {
		t.Skip("SQLite: one writer at a time; B cannot emit while A is open")
	}
	ctx := context.Background()
	now := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	emitted, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- db.Write(ctx, func(tx store.Tx) error {
			if _, err := Emit(ctx, tx, IssueFiled, "a.git", "a", now, map[string]string{"w": "A"}); err != nil {
				return err
			}
			close(emitted)
			<-release
			return nil
		})
	}()
	<-emitted
	bDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(bDone)
		errs <- db.Write(ctx, func(tx store.Tx) error {
			_, err := Emit(ctx, tx, IssueFiled, "a.git", "b", now, map[string]string{"w": "B"})
			return err
		})
	}()
	// B has either committed (ids taken at insert) or waits for A.
	for deadline := time.Now().Add(time.Minute); ; {
		var waiting int
		if err := db.R().QueryRowContext(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case <-bDone:
		default:
			if waiting == 0 {
				if time.Now().After(deadline) {
					t.Fatal("B neither committed nor waited")
				}
				continue
			}
		}
		break
	}
	var cursor int64
	read := func() []Event {
		evs, err := List(ctx, db.R(), cursor, []string{"a.git"}, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			cursor = max(cursor, e.ID)
		}
		return evs
	}
	seen := read()
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen = append(seen, read()...)
	if len(seen) != 2 {
		t.Fatalf("the reader saw %d of 2 events: %+v", len(seen), seen)
	}
}
