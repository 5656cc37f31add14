package store

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/collab-forge/collab/internal/flock"
)

// WALPath is the database's write-ahead log.
func (db *DB) WALPath() string { return db.path + "-wal" }

// Checkpoint copies the WAL into the database and truncates it to zero
// bytes (wal_checkpoint(TRUNCATE)). It never queues ahead of real writers:
// when one holds the writer lock it does nothing and reports busy, and a
// reader still on an older snapshot makes it copy what it can and report
// busy too (SQLite's wait for readers is given no time).
func (db *DB) Checkpoint(ctx context.Context) (busy bool, err error) {
	if db.readOnly || db.pg {
		return false, nil
	}
	unlock, ok, err := flock.TryLock(db.path+".lock", FileMode)
	if err != nil {
		return false, err
	}
	if !ok {
		return true, nil
	}
	defer unlock()
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA busy_timeout = "+strconv.Itoa(int(DefaultBusyTimeout/time.Millisecond))) //nolint:errcheck // best effort
	// Read the result row to the end: a statement left open would itself
	// hold the WAL back.
	rows, err := conn.QueryContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	if err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	defer rows.Close()
	var blocked, frames, copied int
	for rows.Next() {
		if err := rows.Scan(&blocked, &frames, &copied); err != nil {
			return false, fmt.Errorf("checkpoint: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("checkpoint: %w", err)
	}
	return blocked != 0, nil
}

// KeepWALSmall runs until ctx ends, looking at the WAL every period and
// checkpointing it (down to zero bytes) once a whole period has passed
// without a write: a long reader lets the WAL grow, and SQLite's own
// checkpoints only cut it back when a later write restarts it. For
// collab-web, the one long-running process.
func (db *DB) KeepWALSmall(ctx context.Context, every time.Duration, log *slog.Logger) {
	if db.pg {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	type look struct {
		size int64
		mod  time.Time
	}
	var last look
	wasBusy := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(db.WALPath())
		if err != nil || fi.Size() == 0 {
			last = look{}
			continue
		}
		cur := look{fi.Size(), fi.ModTime()}
		if cur != last {
			last = cur // written since the last look: not idle yet
			continue
		}
		busy, err := db.Checkpoint(ctx)
		switch {
		case err != nil:
			log.WarnContext(ctx, "WAL checkpoint failed", "error", err.Error(), "wal_bytes", cur.size)
		case busy && !wasBusy:
			log.InfoContext(ctx, "WAL checkpoint waits for a reader or writer", "wal_bytes", cur.size)
		case !busy:
			log.InfoContext(ctx, "WAL checkpointed and truncated", "wal_bytes", cur.size)
			last = look{}
		}
		wasBusy = busy
	}
}
