// Package reponame turns what a client calls a repository into the one key
// every table uses (org/foo.git) and the directory under repos/, refusing
// every name that could escape repos/ or reach git as an option.
package reponame

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/text"
)

// MaxLen bounds a repository name.
const MaxLen = 255

// Key validates a client-given name and returns its key: "foo", "foo.git",
// "org/foo", "org/foo.git" and "/org/foo.git" all give "org/foo.git".
func Key(name string) (string, error) {
	n := strings.TrimPrefix(name, "/")
	bad := func(why string) error {
		return fault.New(fault.Usage, "bad repository name %q: %s", text.Clip(name), why)
	}
	if n == "" {
		return "", bad("empty")
	}
	if len(n) > MaxLen {
		return "", bad("too long")
	}
	if strings.HasPrefix(n, "/") {
		return "", bad("absolute path")
	}
	if strings.ContainsRune(n, '\\') {
		return "", bad("backslash")
	}
	for _, r := range n {
		if r < 0x20 || r == 0x7f {
			return "", bad("control character")
		}
	}
	n = strings.TrimSuffix(n, "/")
	n = strings.TrimSuffix(n, ".git") + ".git"
	if len(n) > MaxLen {
		// Checked on the key too, so that a key is always a valid name
		// (hooks check that Key(key) == key).
		return "", bad("too long")
	}
	for _, seg := range strings.Split(n, "/") {
		switch {
		case seg == "" || seg == ".git":
			return "", bad("empty path segment")
		case seg == "..":
			return "", bad("..")
		case strings.HasPrefix(seg, "-"):
			return "", bad("segment starts with -")
		case strings.HasPrefix(seg, "."):
			return "", bad("segment starts with .")
		}
	}
	return n, nil
}

// Display is the name used in links and messages: the key without ".git".
func Display(key string) string { return strings.TrimSuffix(key, ".git") }

// Dir returns the directory of key under reposDir after checking, with
// symlinks resolved, that it lies inside reposDir. A missing repository is
// NotFound.
func Dir(reposDir, key string) (string, error) {
	root, err := filepath.EvalSymlinks(reposDir)
	if err != nil {
		return "", fmt.Errorf("resolve repos dir: %w", err)
	}
	p := filepath.Join(root, filepath.FromSlash(key))
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", fault.New(fault.NotFound, "repository %s not found", Display(key))
	}
	if err != nil {
		return "", fault.New(fault.NotFound, "repository %s not found", Display(key))
	}
	if !Inside(root, real) {
		return "", fault.New(fault.Usage, "bad repository name %q: outside the forge", Display(key))
	}
	return real, nil
}

// Inside reports whether path lies strictly inside dir; both must be clean
// and absolute. A plain prefix test would let repos-evil/ pass for repos/.
func Inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
