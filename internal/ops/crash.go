//go:build collab_crash

package ops

import (
	"os"
	"syscall"
)

// CrashAfterMoveVar, set to "after-move" in the environment of a process
// built with the collab_crash tag (only the end-to-end tests build one)
// that runs a submit, kills that process (SIGKILL) between moving the
// branch and recording the merge: the tests' way to open the window the
// merge scan must repair.
const CrashAfterMoveVar = "COLLAB_TEST_SUBMIT_CRASH"

func afterMove() func() {
	if os.Getenv(CrashAfterMoveVar) != "after-move" {
		return nil
	}
	return func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
}
