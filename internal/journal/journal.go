// Package journal sends collab-hook's structured logs to journald over its
// native protocol, or to ROOT/log/collab-hook.log as JSON lines where no
// journal socket exists. Nothing here ever writes to the pusher's terminal.
//
// Every entry carries SYSLOG_IDENTIFIER=collab-hook, MESSAGE and PRIORITY;
// slog attributes become journal fields with upper-cased names (PRINCIPAL,
// REPO, REF, OLD_OID, NEW_OID, PATCH, ISSUE, OUTCOME, DURATION_MS, …), so
// that `journalctl -t collab-hook REPO=foo.git` finds them.
package journal

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Identifier is the SYSLOG_IDENTIFIER of every entry.
const Identifier = "collab-hook"

// SocketEnv names the variable that overrides the journal socket path.
const SocketEnv = "COLLAB_JOURNAL_SOCKET"

// DefaultSocket is journald's native socket.
const DefaultSocket = "/run/systemd/journal/socket"

// LogFile is the fallback file under the root.
const LogFile = "collab-hook.log"

// Open returns the logger for one collab-hook run and a function that
// closes what it opened. It never fails: without a journal and without a
// writable log directory, logs are dropped rather than shown to a client.
// The socket comes from COLLAB_JOURNAL_SOCKET, else journald's default.
func Open(rootDir string) (*slog.Logger, func() error) {
	socket := os.Getenv(SocketEnv)
	if socket == "" {
		socket = DefaultSocket
	}
	return OpenAt(rootDir, socket)
}

// OpenAt is Open with an explicit journal socket path.
func OpenAt(rootDir, socket string) (*slog.Logger, func() error) {
	if fi, err := os.Stat(socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if h, err := Dial(socket); err == nil {
			return slog.New(h), h.Close
		}
	}
	dir := filepath.Join(rootDir, "log")
	// Private to the forge's user and group whatever the umask (which can
	// only tighten these): logs name repositories and principals.
	_ = os.MkdirAll(dir, 0o750)
	f, err := os.OpenFile(filepath.Join(dir, LogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return slog.New(slog.DiscardHandler), func() error { return nil }
	}
	return slog.New(NewFileHandler(f)), f.Close
}

// NewFileHandler writes one JSON object per entry to w, with the same field
// names as the journal: TIMESTAMP, PRIORITY, SYSLOG_IDENTIFIER, MESSAGE and
// the upper-cased attributes.
func NewFileHandler(w io.Writer) slog.Handler {
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 {
				switch a.Key {
				case slog.TimeKey:
					a.Key = "TIMESTAMP"
					return a
				case slog.LevelKey:
					return slog.String("PRIORITY", priority(a.Value.Any().(slog.Level)))
				case slog.MessageKey:
					a.Key = "MESSAGE"
					return a
				}
			}
			// Groups stay nested objects in JSON; only the key is renamed.
			a.Key = FieldName(nil, a.Key)
			return a
		},
	})
	return h.WithAttrs([]slog.Attr{slog.String("SYSLOG_IDENTIFIER", Identifier)})
}

// priority maps a slog level to syslog's: 3 err, 4 warning, 6 info, 7 debug.
func priority(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "3"
	case l >= slog.LevelWarn:
		return "4"
	case l >= slog.LevelInfo:
		return "6"
	default:
		return "7"
	}
}

// FieldName turns an attribute key (inside groups) into a journal field
// name: upper case, [A-Z0-9_] only, no leading underscore (those are
// journald's trusted fields), at most 64 bytes.
func FieldName(groups []string, key string) string {
	b := make([]byte, 0, len(key)+8)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c >= 'a' && c <= 'z':
				b = append(b, c-'a'+'A')
			case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
				b = append(b, c)
			default:
				b = append(b, '_')
			}
		}
	}
	for _, g := range groups {
		add(g)
		b = append(b, '_')
	}
	add(key)
	for len(b) > 0 && (b[0] == '_' || (b[0] >= '0' && b[0] <= '9')) {
		b = b[1:]
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "FIELD"
	}
	return string(b)
}
