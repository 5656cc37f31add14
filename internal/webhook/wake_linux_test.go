//go:build linux

package webhook

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

func inotifyEvent(name string, pad int) []byte {
	b := make([]byte, unix.SizeofInotifyEvent+len(name)+pad)
	binary.NativeEndian.PutUint32(b[4:8], unix.IN_CLOSE_WRITE)
	binary.NativeEndian.PutUint32(b[12:16], uint32(len(name)+pad))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func TestCommitted(t *testing.T) {
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		buf  []byte
		want bool
	}{
		{"the lock file", inotifyEvent("collab.db.lock", 2), true},
		{"another file", inotifyEvent("collab.db-wal", 3), false},
		{"a prefix only", inotifyEvent("collab.db.lock.old", 2), false},
		{"second of two", cat(inotifyEvent("collab.db", 7), inotifyEvent("collab.db.lock", 2)), true},
		{"truncated", inotifyEvent("collab.db.lock", 2)[:unix.SizeofInotifyEvent+3], false},
		{"empty", nil, false},
	} {
		if got := committed(tc.buf, "collab.db.lock"); got != tc.want {
			t.Errorf("%s: committed = %v", tc.name, got)
		}
	}
}
