package serve

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/pushlimit"
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
