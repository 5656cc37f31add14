package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/ops"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/store"
)

// The input size hint. serve starts git-receive-pack before it reads the
// push limits, and the pack's bound (push_max_input_size, git's
// receive.maxInputSize) is one of git's arguments: git starts with the
// bound in this file, the one the last push found, and a push that reads
// another starts git again, and writes the file. The file is never the
// authority: a missing, stale or unreadable one costs a push git's start
// once more, nothing else.

func inputSizeHintPath(root forge.Root) string { return root.DBPath() + ".input-size" }

// inputSizeHint is the bound the last push found, or the default.
func inputSizeHint(root forge.Root) int64 {
	b, err := os.ReadFile(inputSizeHintPath(root))
	if err != nil {
		return pushlimit.Defaults().InputSize
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return pushlimit.Defaults().InputSize
	}
	return n
}

// writeInputSizeHint replaces the file whole (a temporary file, then a
// rename), so that no push reads half of it.
func writeInputSizeHint(root forge.Root, n int64) error {
	path := inputSizeHintPath(root)
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(n, 10)+"\n"), 0o640); err != nil {
		return fmt.Errorf("write the input size hint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write the input size hint: %w", err)
	}
	return nil
}

// checkWriter opens the database and checks that r's principal may push
// to repository key: the principal still exists, is enabled and holds the
// key used, and has write access; and that the root is writable.
func checkWriter(ctx context.Context, r *Request, key string) (*store.DB, access.Level, error) {
	db, err := r.Root.OpenShort(ctx)
	if err != nil {
		return nil, 0, fault.Default(err, "forge database unavailable")
	}
	if err := checkPrincipal(ctx, db, r.Principal, r.UserAuth); err != nil {
		db.Close()
		return nil, 0, err
	}
	level, err := (&ops.Service{DB: db}).GitAccess(ctx, r.Principal, key, access.Write)
	if err == nil {
		// git would unpack the push before any hook could refuse it.
		err = store.ReadOnlyNow(r.Root.DBPath())
	}
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, level, nil
}

// writersDir holds a mark per principal and repository that passed
// serve's access check for a push: where there is one, serve starts git
// beside the next check rather than after it. A mark outlives a revoked
// grant harmlessly: the check still refuses before any byte passes; it
// only lets git start first for someone who could push before.
func writersDir(root forge.Root) string { return root.DBPath() + ".writers" }

func writerMark(root forge.Root, principal, key string) string {
	sum := sha256.Sum256([]byte(principal + "\x00" + key))
	return filepath.Join(writersDir(root), hex.EncodeToString(sum[:16]))
}

// EarlyOffVar, set to "off" in serve's environment, turns off the early
// start: git then starts after the access check for everyone, for
// measuring the one against the other (bench/builds -old . -old-env
// COLLAB_EARLY_GIT=off).
const EarlyOffVar = "COLLAB_EARLY_GIT"

// wroteBefore reports whether principal passed the check for key before
// (and the early start is on).
func wroteBefore(root forge.Root, principal, key string) bool {
	if os.Getenv(EarlyOffVar) == "off" {
		return false
	}
	_, err := os.Lstat(writerMark(root, principal, key))
	return err == nil
}

// noteWriter marks principal as one who passed the check for key.
func noteWriter(root forge.Root, principal, key string) error {
	if err := os.MkdirAll(writersDir(root), forge.DirMode); err != nil {
		return fmt.Errorf("note a writer: %w", err)
	}
	f, err := os.OpenFile(writerMark(root, principal, key), os.O_WRONLY|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("note a writer: %w", err)
	}
	return f.Close()
}
