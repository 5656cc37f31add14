package submit

import "strings"

// reflogPrefix starts the reflog message of a branch move made by patch
// submit: "collab submit STRATEGY PATCH".
const reflogPrefix = "collab submit "

// Reflog is the reflog message of a submit's branch move. With the
// submitter as the move's committer identity (hookenv.Committer), a merge
// scan that makes the move up later (the submit died between moving the
// branch and recording the merge) credits it as the submit it was.
func Reflog(strategy, patchID string) string {
	return reflogPrefix + strategy + " " + patchID
}

// ReflogStrategy reports the strategy of a reflog message Reflog wrote.
func ReflogStrategy(msg string) (strategy string, ok bool) {
	rest, ok := strings.CutPrefix(msg, reflogPrefix)
	if !ok {
		return "", false
	}
	strategy, _, ok = strings.Cut(rest, " ")
	switch strategy {
	case "merge", "ff-only", "rebase", "squash":
		return strategy, ok
	}
	return "", false
}
