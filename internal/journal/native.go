package journal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Handler is a slog.Handler that sends each record as one datagram of
// journald's native protocol.
type Handler struct {
	// sock is the connected datagram socket, a plain blocking fd: package
	// net, whose initialisation costs a tenth of a hook's start-up, is not
	// needed for one connect and a write per entry (TestFastDeps).
	sock   int
	attrs  []field // from WithAttrs, already named
	groups []string
}

type field struct{ name, value string }

// Dial connects to the journal socket at path.
func Dial(path string) (*Handler, error) {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("journal socket %s: %w", path, err)
	}
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(s)
		return nil, fmt.Errorf("journal socket %s: %w", path, err)
	}
	return &Handler{sock: s}, nil
}

// Close closes the socket; handlers derived with With share it.
func (h *Handler) Close() error { return unix.Close(h.sock) }

// Enabled drops debug entries.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

// WithAttrs returns a handler adding as to every entry.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &Handler{sock: h.sock, groups: h.groups}
	n.attrs = append(append([]field{}, h.attrs...), flatten(h.groups, as)...)
	return n
}

// WithGroup returns a handler that prefixes later attributes with name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{sock: h.sock, attrs: h.attrs, groups: append(append([]string{}, h.groups...), name)}
}

// Handle sends r.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	fs := []field{
		{"SYSLOG_IDENTIFIER", Identifier},
		{"PRIORITY", priority(r.Level)},
		{"MESSAGE", r.Message},
	}
	fs = append(fs, h.attrs...)
	var as []slog.Attr
	r.Attrs(func(a slog.Attr) bool { as = append(as, a); return true })
	fs = append(fs, flatten(h.groups, as)...)
	return h.send(Encode(fs))
}

// reserved fields are set by Handle itself; an attribute of that name is
// dropped rather than sent twice.
var reserved = map[string]bool{"SYSLOG_IDENTIFIER": true, "PRIORITY": true, "MESSAGE": true}

func flatten(groups []string, as []slog.Attr) []field {
	var out []field
	for _, a := range as {
		v := a.Value.Resolve()
		if a.Equal(slog.Attr{}) {
			continue
		}
		if v.Kind() == slog.KindGroup {
			g := groups
			if a.Key != "" {
				g = append(append([]string{}, groups...), a.Key)
			}
			out = append(out, flatten(g, v.Group())...)
			continue
		}
		name := FieldName(groups, a.Key)
		if reserved[name] {
			continue
		}
		out = append(out, field{name, valueString(v)})
	}
	return out
}

func valueString(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	case slog.KindDuration:
		return fmt.Sprint(v.Duration().Milliseconds())
	}
	return v.String()
}

// Encode renders fields in the native protocol: NAME=value lines, or, for a
// value holding a newline, NAME, a newline, the value's length as a 64-bit
// little-endian integer, the value and a newline.
func Encode(fs []field) []byte {
	var b []byte
	for _, f := range fs {
		if strings.ContainsRune(f.value, '\n') {
			b = append(b, f.name...)
			b = append(b, '\n')
			b = binary.LittleEndian.AppendUint64(b, uint64(len(f.value)))
			b = append(b, f.value...)
			b = append(b, '\n')
			continue
		}
		b = append(b, f.name...)
		b = append(b, '=')
		b = append(b, f.value...)
		b = append(b, '\n')
	}
	return b
}

func (h *Handler) send(msg []byte) error {
	err := retry(func() error { _, err := unix.Write(h.sock, msg); return err })
	if err == nil {
		return nil
	}
	if !errors.Is(err, syscall.EMSGSIZE) && !errors.Is(err, syscall.ENOBUFS) {
		return fmt.Errorf("journal: %w", err)
	}
	// Too big for one datagram: journald takes the entry from a sealed
	// memfd passed along instead (sd_journal_send does the same).
	fd, err := unix.MemfdCreate("collab-journal", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fmt.Errorf("journal: memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "collab-journal")
	defer f.Close()
	if _, err := f.Write(msg); err != nil {
		return fmt.Errorf("journal: memfd: %w", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE|unix.F_SEAL_SEAL); err != nil {
		return fmt.Errorf("journal: seal: %w", err)
	}
	if err := retry(func() error { return unix.Sendmsg(h.sock, nil, unix.UnixRights(int(f.Fd())), nil, 0) }); err != nil {
		return fmt.Errorf("journal: send memfd: %w", err)
	}
	return nil
}

// retry runs a syscall again where a signal interrupted it.
func retry(call func() error) error {
	for {
		if err := call(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
