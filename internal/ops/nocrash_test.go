//go:build !collab_crash

package ops

import "testing"

// Only the tests' collab_crash build can be told to kill a submit halfway;
// a real build ignores the variable.
func TestNoCrashHook(t *testing.T) {
	t.Setenv("COLLAB_TEST_SUBMIT_CRASH", "after-move")
	if afterMove() != nil {
		t.Fatal("a build without the collab_crash tag would kill a submit")
	}
}
