package backup

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/collab-forge/collab/internal/forge"
)

type stats struct {
	files int
	bytes int64
}

// copyTree copies the regular files under src to the same places under dst,
// leaving out what skip says (rel is slash-separated, relative to src) and
// files already in dst (objects are immutable: a second pass only adds). A
// file that vanishes before it is read (git gc pruned it) is left out; the
// caller checks what is missing. Directories get DirMode; files keep their
// owner's bits and at most the group's read bit.
func copyTree(src, dst string, skip func(rel string, d fs.DirEntry) bool, st *stats) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != src {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel != "." && skip(filepath.ToSlash(rel), d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(to, forge.DirMode); err != nil {
				return fmt.Errorf("copy %s: %w", path, err)
			}
			return nil
		case !d.Type().IsRegular():
			return nil // sockets, symlinks: nothing a bare repository needs
		}
		if _, err := os.Lstat(to); err == nil {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		n, err := copyData(path, to, info.Mode().Perm()&0o740)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		st.files++
		st.bytes += n
		return nil
	})
}

// copyFile copies one file that must exist to dst with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	_, err := copyData(src, dst, mode)
	return err
}

func copyData(src, dst string, mode os.FileMode) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	// Written under a temporary name and renamed, so that a copy cut
	// short never looks whole to a second pass.
	tmp := dst + ".partial"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return 0, fmt.Errorf("copy %s: %w", src, err)
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, mode)
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("copy %s: %w", src, err)
	}
	return n, nil
}
