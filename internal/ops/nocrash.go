//go:build !collab_crash

package ops

// afterMove is what a submit runs between moving the branch and recording
// the merge: nothing, but in the tests' collab_crash build (crash.go).
func afterMove() func() { return nil }
