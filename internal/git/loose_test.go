package git

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestLooseCommit(t *testing.T) {
	ctx := context.Background()
	r, o := repo(t)
	objs := filepath.Join(r.Dir, "objects")
	merge, err := r.Run(ctx, nil, "commit-tree", "-p", o["two"], "-p", o["side"], "-m", "merge", o["two"]+"^{tree}")
	if err != nil {
		t.Fatal(err)
	}
	o["merge"] = string(merge[:len(merge)-1])
	tree, err := r.Run(ctx, nil, "rev-parse", o["two"]+"^{tree}")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, oid string
		parents   []string
		err       error
	}{
		{"root", o["root"], nil, nil},
		{"one parent, trailers", o["two"], []string{o["root"]}, nil},
		{"merge", o["merge"], []string{o["two"], o["side"]}, nil},
		{"a tree", string(tree[:len(tree)-1]), nil, ErrNotLoose},
		{"absent", "1234567890123456789012345678901234567890", nil, ErrNotLoose},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := LooseCommit(objs, tc.oid)
			if !errors.Is(err, tc.err) {
				t.Fatalf("LooseCommit = %v, want %v", err, tc.err)
			}
			if tc.err != nil {
				return
			}
			want, err := r.Run(ctx, nil, "cat-file", "commit", tc.oid)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != string(want) {
				t.Errorf("body = %q, want git's %q", body, want)
			}
			if got := CommitParents(body); !slices.Equal(got, tc.parents) {
				t.Errorf("CommitParents = %v, want %v", got, tc.parents)
			}
		})
	}
	if _, err := LooseCommit(objs, "../../etc"); err == nil || errors.Is(err, ErrNotLoose) {
		t.Errorf("LooseCommit(not an oid) = %v", err)
	}
	// Packed, it is no longer loose: the caller asks git.
	if out, err := exec.Command("git", "-C", r.Dir, "gc", "-q", "--prune=now").CombinedOutput(); err != nil {
		t.Fatalf("gc: %v: %s", err, out)
	}
	if _, err := LooseCommit(objs, o["two"]); !errors.Is(err, ErrNotLoose) {
		t.Errorf("LooseCommit(packed) = %v, want ErrNotLoose", err)
	}
}
