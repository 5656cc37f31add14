// Package layout names what lies where in a forge root and the umask its
// files are made under. It links nothing heavy, so that every binary, the lean collab-hook-fast too, takes
// the paths from one place.
package layout

import (
	"fmt"
	"path/filepath"
)

// Umask is what collab-hook, collab-hook-fast and collab-web set before
// anything else, so that what they and their git children create is
// private too. git applies
// core.sharedRepository to a file once it finishes it; what a killed push
// leaves behind (a temporary pack is made 0444, a lock 0666, less the
// umask) kept a mode open to others, and fsck reported it (TestKillPushes,
// once in a loaded run).
const Umask = 0o027

// DefaultRoot is the root when neither --root nor COLLAB_ROOT says
// otherwise.
const DefaultRoot = "/srv/collab"

// Repos is the directory of root's repositories.
func Repos(root string) string { return filepath.Join(root, "repos") }

// PostgresBinary is collab-hook built with the PostgreSQL store, which
// collab-hook, built without it, hands a run over to where the root's
// record is on PostgreSQL (cmd/collab-hook/handover.go).
const PostgresBinary = "collab-hook-pg"

// DB is root's database file.
func DB(root string) string { return filepath.Join(root, "collab.db") }

// Resolve makes dir absolute with symlinks resolved (where it exists), so
// that hooks compare paths reliably.
func Resolve(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("root %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	return abs, nil
}
