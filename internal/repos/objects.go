package repos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ObjectStore is where a collab repository keeps its objects: DIR/odb,
// with DIR/objects, where git and everything else look, a symlink to it.
//
// After every push receive-pack checks connectivity in quarantine, where
// the repository is its own alternate, and git lists an alternate's refs
// as known tips by starting a process (core.alternateRefsCommand; `true`,
// which lists none, see gitConfig). It does so only for an alternate
// whose real path ends in "/objects" (refs_from_alternate_cb in git's
// transport.c); with the directory named odb git passes it by, and the
// check knows the same tips as with `true`, without the process: 5-9 ms
// of each push on the machines collab is measured on (docs/push.md).
//
// The price: git refuses a local clone (git clone PATH, which hard-links
// the objects) of a repository whose objects/ is a symlink ("failed to
// start iterator over '.../objects': Not a directory"); a clone with
// --no-local, or of a file:// URL, works.
//
// COLLAB_ODB_LINK=off (LinkVar) in the environment of repo create, fsck
// and restore keeps the stock layout, for measuring it: go run
// ./bench/builds -old . -old-env COLLAB_ODB_LINK=off, two runs of 61
// rounds, medians of the paired rounds: the link saves a branch push
// 7.1 / 9.8 ms wall and 8.8 / 11.1 ms CPU, a refs/for push 6.7 / 9.4 ms
// wall, a push to a branch no patch targets 9.2 / 7.9 ms wall. It stays.
const ObjectStore = "odb"

// LinkVar turns the move to ObjectStore off when set to "off".
const LinkVar = "COLLAB_ODB_LINK"

// LinkOff reports whether LinkVar turns the move off in this process.
func LinkOff() bool { return os.Getenv(LinkVar) == "off" }

// Unrelocated reports whether the repository at dir keeps its objects
// in DIR/objects itself, a real directory, where collab would put them
// in ObjectStore. A link made by an operator (objects on another disk)
// is theirs, and not reported.
func Unrelocated(dir string) bool {
	st, err := os.Lstat(filepath.Join(dir, "objects"))
	return err == nil && st.IsDir()
}

// Relocate moves the repository's objects directory to ObjectStore and
// leaves in its place the link to it, in one rename that swaps the two
// names (renameat2 RENAME_EXCHANGE), so that at no moment does
// DIR/objects lead nowhere: a git serving the repository meanwhile never
// misses an object. It does nothing (false) where LinkOff, where the
// repository is not Unrelocated, or where the filesystem cannot swap names (EINVAL): the
// stock layout stays there, and costs each push git's process.
func Relocate(dir string) (moved bool, err error) {
	if LinkOff() || !Unrelocated(dir) {
		return false, nil
	}
	objects, store := filepath.Join(dir, "objects"), filepath.Join(dir, ObjectStore)
	// The link is made under the store's name, leading to itself until the
	// swap gives each name the other's file. One a killed run left (a link
	// to itself) is made again; anything else there is not collab's.
	if _, err := os.Lstat(store); err == nil {
		if target, err := os.Readlink(store); err != nil || target != ObjectStore {
			return false, fmt.Errorf("relocate %s: %s is there already", objects, store)
		}
		if err := os.Remove(store); err != nil {
			return false, fmt.Errorf("relocate %s: %w", objects, err)
		}
	}
	if err := os.Symlink(ObjectStore, store); err != nil {
		return false, fmt.Errorf("relocate %s: %w", objects, err)
	}
	err = unix.Renameat2(unix.AT_FDCWD, objects, unix.AT_FDCWD, store, unix.RENAME_EXCHANGE)
	if err == nil {
		return true, nil
	}
	_ = os.Remove(store) // still the link: nothing was swapped
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return false, nil
	}
	return false, fmt.Errorf("relocate %s: %w", objects, err)
}
