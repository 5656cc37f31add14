// Package layout names what lies where in a forge root. It links nothing
// heavy, so that every binary, the lean collab-hook-fast too, takes
// the paths from one place.
package layout

import (
	"fmt"
	"path/filepath"
)

// DefaultRoot is the root when neither --root nor COLLAB_ROOT says
// otherwise.
const DefaultRoot = "/srv/collab"

// Repos is the directory of root's repositories.
func Repos(root string) string { return filepath.Join(root, "repos") }

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
