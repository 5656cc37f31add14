package git

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRefUpdater(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// updates are committed unless abort; oid values name commits of
		// repo's history.
		updates []RefUpdate
		abort   bool
		// closeTwice aborts after the commit and commits again.
		closeTwice bool
		// wantErr is in the error; "" wants none.
		wantErr string
		// gitErr: the error is git's, with what it said.
		gitErr bool
		// want are the refs that changed (ZeroOID: deleted).
		want map[string]string
	}{
		{
			name:    "commit writes refs",
			updates: []RefUpdate{{Ref: "refs/collab/a", New: "two"}, {Ref: "refs/heads/main", New: "root", Old: "two"}, {Ref: "refs/heads/side", New: ZeroOID}},
			want:    map[string]string{"refs/collab/a": "two", "refs/heads/main": "root", "refs/heads/side": ZeroOID},
		},
		{
			name:    "abort writes nothing",
			updates: []RefUpdate{{Ref: "refs/collab/a", New: "two"}},
			abort:   true,
		},
		{
			name:    "a name that breaks the line is refused before git reads anything",
			updates: []RefUpdate{{Ref: "refs/collab/a", New: "two"}, {Ref: "refs/collab/b c", New: "two"}},
			wantErr: `bad ref name "refs/collab/b c"`,
		},
		{
			name:    "a name git refuses writes nothing",
			updates: []RefUpdate{{Ref: "refs/collab/a", New: "two"}, {Ref: "refs/collab/b..c", New: "two"}},
			wantErr: "invalid ref format",
			gitErr:  true,
		},
		{
			name:    "an old value that does not match fails the whole transaction",
			updates: []RefUpdate{{Ref: "refs/collab/a", New: "two"}, {Ref: "refs/heads/main", New: "side", Old: "root"}},
			wantErr: "but expected",
			gitErr:  true,
		},
		{
			name:       "abort after commit is harmless and a second commit is refused",
			updates:    []RefUpdate{{Ref: "refs/collab/a", New: "two"}},
			closeTwice: true,
			want:       map[string]string{"refs/collab/a": "two"},
		},
		{
			name: "an empty commit changes nothing",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, o := repo(t)
			oid := func(s string) string {
				if v, ok := o[s]; ok {
					return v
				}
				return s
			}
			before, err := r.Refs(ctx, "refs/")
			if err != nil {
				t.Fatal(err)
			}
			var ups []RefUpdate
			for _, u := range tc.updates {
				ups = append(ups, RefUpdate{Ref: u.Ref, New: oid(u.New), Old: oid(u.Old)})
			}
			u, err := r.StartRefUpdate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer u.Abort()
			if tc.abort {
				u.Abort()
			} else {
				err = u.Commit(ups)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Commit = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Commit = %v, want %q", err, tc.wantErr)
			}
			var ge *Error
			if isGit := errors.As(err, &ge); isGit != tc.gitErr || isGit && !strings.Contains(ge.Stderr, tc.wantErr) {
				t.Errorf("Commit = %#v, want git's error %v", err, tc.gitErr)
			}
			if tc.closeTwice {
				u.Abort()
				u.Abort()
				if err := u.Commit([]RefUpdate{{Ref: "refs/collab/late", New: o["root"]}}); err == nil {
					t.Error("a second Commit succeeded")
				}
			}
			if u.cmd.ProcessState == nil {
				t.Error("git was not waited for")
			}
			after, err := r.Refs(ctx, "refs/")
			if err != nil {
				t.Fatal(err)
			}
			want := maps.Clone(before)
			for ref, v := range tc.want {
				if v == ZeroOID {
					delete(want, ref)
				} else {
					want[ref] = oid(v)
				}
			}
			if !maps.Equal(after, want) {
				t.Errorf("refs = %v, want %v", after, want)
			}
		})
	}
}

// A cancelled context kills a waiting update-ref: Commit fails and
// writes nothing.
func TestRefUpdaterCancel(t *testing.T) {
	r, o := repo(t)
	ctx, cancel := context.WithCancel(context.Background())
	u, err := r.StartRefUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Abort()
	cancel()
	// The kill comes from exec's goroutine: wait for git to be a zombie
	// (killed, not yet waited for), else a quick git could finish first.
	stat := fmt.Sprintf("/proc/%d/stat", u.cmd.Process.Pid)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatal(err)
		}
		if _, rest, _ := strings.Cut(string(b), ") "); strings.HasPrefix(rest, "Z") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("git not killed: %s", b)
		}
	}
	if err := u.Commit([]RefUpdate{{Ref: "refs/collab/a", New: o["two"]}}); err == nil {
		t.Fatal("Commit after cancel succeeded")
	}
	if st := u.cmd.ProcessState; st == nil || st.Success() {
		t.Errorf("git's state = %v, want killed", st)
	}
	if _, ok, err := r.ResolveRef(context.Background(), "refs/collab/a"); err != nil || ok {
		t.Errorf("refs/collab/a exists = %v, %v", ok, err)
	}
}

// An update-ref started before another writer moves (and packs) the ref
// sees that writer's value at Commit: it reads and locks refs only when
// its input ends, so starting it early reorders nothing.
func TestRefUpdaterReadsAtCommit(t *testing.T) {
	ctx := context.Background()
	r, o := repo(t)
	u, err := r.StartRefUpdate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Abort()
	if err := r.UpdateRefs(ctx, []RefUpdate{{Ref: "refs/heads/main", New: o["side"], Old: o["two"]}}); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "--git-dir="+r.Dir, "pack-refs", "--all").CombinedOutput(); err != nil {
		t.Fatalf("pack-refs: %v: %s", err, out)
	}
	if err := u.Commit([]RefUpdate{{Ref: "refs/heads/main", New: o["root"], Old: o["side"]}}); err != nil {
		t.Fatalf("Commit over the later writer's value = %v", err)
	}
	if at, _, err := r.ResolveRef(ctx, "refs/heads/main"); err != nil || at != o["root"] {
		t.Errorf("main = %s, %v; want root", at, err)
	}
}
