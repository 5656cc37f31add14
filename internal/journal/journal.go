// Package journal sends collab-hook's structured logs to journald, or to
// ROOT/log/collab-hook.log as JSON lines where no journal socket exists.
// Nothing here ever writes to the pusher's terminal.
package journal

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Identifier is the SYSLOG_IDENTIFIER of every entry.
const Identifier = "collab-hook"

// Open returns the logger for one collab-hook run and a function that
// closes what it opened. It never fails: without a journal and without a
// writable log directory, logs are dropped rather than shown to a client.
func Open(rootDir string) (*slog.Logger, func() error) {
	// TODO(issue 3): the journald native protocol, COLLAB_JOURNAL_SOCKET.
	dir := filepath.Join(rootDir, "log")
	_ = os.MkdirAll(dir, 0o755)
	f, err := os.OpenFile(filepath.Join(dir, "collab-hook.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return slog.New(slog.NewJSONHandler(io.Discard, nil)), func() error { return nil }
	}
	return slog.New(slog.NewJSONHandler(f, nil)).With("SYSLOG_IDENTIFIER", Identifier), f.Close
}
