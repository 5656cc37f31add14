package git

import (
	"bytes"
	"context"
	"fmt"
	"strings"
)

// PatchID returns git patch-id --stable of the diff from..to (from "":
// to against nothing, as for a root commit), "" for an empty diff: two
// diffs with the same id make the same change, whatever they were made
// on. It takes two git processes; callers ask only where a commit's
// credit is in question.
func (r Repo) PatchID(ctx context.Context, from, to string) (string, error) {
	if !IsOID(to) || from != "" && !IsOID(from) {
		return "", fmt.Errorf("patch-id %q..%q: not object ids", from, to)
	}
	args := []string{"diff-tree", "-p", "--no-color", "--no-ext-diff", "--no-textconv", "-r", "--full-index"}
	if from == "" {
		args = append(args, "--root", to)
	} else {
		args = append(args, from, to)
	}
	diff, err := r.Run(ctx, nil, args...)
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(diff)) == 0 {
		return "", nil
	}
	// patch-id wants a commit line before a diff that does not start with
	// one; diff-tree of two trees prints none.
	in := append([]byte("commit "+to+"\n"), diff...)
	out, err := r.Run(ctx, bytes.NewReader(in), "patch-id", "--stable")
	if err != nil {
		return "", err
	}
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return id, nil
}
