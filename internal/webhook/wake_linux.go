//go:build linux

package webhook

import (
	"context"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// watchCommits returns a channel that receives soon after any process
// commits to the database at dbPath, or nil when it cannot watch (the
// dispatcher then relies on polling alone). Every writer goes through
// store.DB.Write, which closes the side file PATH.lock after its commit
// (that releases its flock), so an IN_CLOSE_WRITE of that file marks a
// commit that readers can already see.
func watchCommits(ctx context.Context, dbPath string, log *slog.Logger) <-chan struct{} {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		log.Warn("no inotify; polling only", "err", err)
		return nil
	}
	lockName := filepath.Base(dbPath) + ".lock"
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(dbPath), unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		log.Warn("cannot watch the database directory; polling only", "err", err)
		return nil
	}
	// A non-blocking descriptor goes through the runtime's poller, so
	// closing the file ends a pending Read.
	f := os.NewFile(uintptr(fd), "inotify")
	wake := make(chan struct{}, 1)
	go func() {
		<-ctx.Done()
		f.Close()
	}()
	go func() {
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if committed(buf[:n], lockName) {
				select {
				case wake <- struct{}{}:
				default: // a wake-up is already pending
				}
			}
		}
	}()
	return wake
}

// committed reports whether a buffer of inotify events names file.
func committed(buf []byte, file string) bool {
	for len(buf) >= unix.SizeofInotifyEvent {
		// struct inotify_event { int wd; uint32 mask, cookie, len; char name[len]; }
		nameLen := int(binary.NativeEndian.Uint32(buf[12:16]))
		end := unix.SizeofInotifyEvent + nameLen
		if end > len(buf) {
			return false
		}
		if strings.TrimRight(string(buf[unix.SizeofInotifyEvent:end]), "\x00") == file {
			return true
		}
		buf = buf[end:]
	}
	return false
}
