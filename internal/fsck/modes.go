package fsck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Modes: what each part of the root may grant beyond its owner. The forge's
// data is private to its user; its group may read (an
// AuthorizedKeysCommandUser in the group reads the database), never write;
// forge.key is the owner's alone.
const (
	openKey  fs.FileMode = 0o077 // forge.key: 0600 or tighter
	openDB   fs.FileMode = 0o037 // collab.db, -wal, -shm, .lock: 0640 or tighter
	openRest fs.FileMode = 0o027 // directories 0750, files 0640 (0750 if executable) or tighter
)

// looseness is the bits of perm that path (relative to the root) must not
// have.
func looseness(rel string) fs.FileMode {
	switch {
	case rel == "forge.key":
		return openKey
	case rel == "collab.db" || strings.HasPrefix(rel, "collab.db-") || rel == "collab.db.lock":
		return openDB
	}
	return openRest
}

// modes finds files and directories of the root whose modes are looser
// than the forge gives them (a plain init under umask 000 before this was
// fixed made the root 0755 and collab.db 0644: a local user could read
// private repositories) and, unless this is a dry run, takes the extra bits
// away.
// Files at the top of the root are named one by one; what lies under a
// directory (repos/, log/) is counted per directory.
func (c *Checker) modes() error {
	fix := !c.DryRun
	root := c.Root.Dir
	loose := map[string]int{} // top-level entry → how many were too open
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone meanwhile (a WAL, a lock, a pruned object)
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		perm := info.Mode().Perm()
		extra := perm & looseness(rel)
		if extra == 0 {
			return nil
		}
		top, _, under := strings.Cut(rel, "/")
		if !under {
			if rel == "." {
				top = "the root"
			}
			names = append(names, fmt.Sprintf("%s: mode %04o is looser than %04o", top, perm, perm&^extra))
		} else {
			loose[top]++
		}
		if fix {
			// Special bits stay (git sets setgid on a shared repository's
			// directories).
			keep := info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
			if err := os.Chmod(path, keep&^extra); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("tighten %s: %w", rel, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("check modes: %w", err)
	}
	tops := make([]string, 0, len(loose))
	for t := range loose {
		tops = append(tops, t)
	}
	sort.Strings(tops)
	for _, t := range tops {
		names = append(names, fmt.Sprintf("%s/: %d files and directories were writable by the group or open to others", t, loose[t]))
	}
	for _, n := range names {
		c.problem(true, "%s; tightened", n)
	}
	return nil
}
