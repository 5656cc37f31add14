package repos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Relocate from each state a repository's objects can be in.
func TestRelocate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string)
		moved   bool
		err     bool
		layout  string // "relocated", "stock" or "link" (an operator's)
	}{
		{"stock", func(*testing.T, string) {}, true, false, "relocated"},
		{"relocated", func(t *testing.T, dir string) { mustRelocate(t, dir) }, false, false, "relocated"},
		{"link left by a killed run", func(t *testing.T, dir string) {
			symlink(t, ObjectStore, filepath.Join(dir, ObjectStore))
		}, true, false, "relocated"},
		{"an operator's link", func(t *testing.T, dir string) {
			elsewhere := filepath.Join(t.TempDir(), "objects")
			if err := os.Rename(filepath.Join(dir, "objects"), elsewhere); err != nil {
				t.Fatal(err)
			}
			symlink(t, elsewhere, filepath.Join(dir, "objects"))
		}, false, false, "link"},
		{"someone else's link in the store's place", func(t *testing.T, dir string) {
			symlink(t, t.TempDir(), filepath.Join(dir, ObjectStore))
		}, false, true, "stock"},
		{"a directory in the store's place", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, ObjectStore), 0o750); err != nil {
				t.Fatal(err)
			}
		}, false, true, "stock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := t.TempDir()
			dir := filepath.Join(w, "r.git")
			gitIn(t, w, "init", "-q", "--bare", "-b", "main", dir)
			gitIn(t, w, "init", "-q", "-b", "main", filepath.Join(w, "c"))
			gitIn(t, filepath.Join(w, "c"), "commit", "-q", "--allow-empty", "-m", "one")
			gitIn(t, filepath.Join(w, "c"), "push", "-q", dir, "main")
			tc.prepare(t, dir)

			moved, err := Relocate(dir)
			if moved != tc.moved || (err != nil) != tc.err {
				t.Fatalf("Relocate = %v, %v; want moved %v, error %v", moved, err, tc.moved, tc.err)
			}
			target, lerr := os.Readlink(filepath.Join(dir, "objects"))
			switch tc.layout {
			case "relocated":
				if lerr != nil || target != ObjectStore || Unrelocated(dir) {
					t.Fatalf("objects -> %q (%v), want the link to %s", target, lerr, ObjectStore)
				}
			case "stock":
				if !Unrelocated(dir) {
					t.Fatal("objects/ is not the directory it was")
				}
			case "link":
				if lerr != nil || target == ObjectStore || Unrelocated(dir) {
					t.Fatalf("objects -> %q (%v), want the operator's link", target, lerr)
				}
			}
			// Whatever the layout, git finds every object.
			gitIn(t, dir, "fsck", "--no-progress", "--strict")
			gitIn(t, filepath.Join(w, "c"), "commit", "-q", "--allow-empty", "-m", "two")
			gitIn(t, filepath.Join(w, "c"), "push", "-q", dir, "main")
			if n := strings.TrimSpace(gitIn(t, dir, "rev-list", "--count", "main")); n != "2" {
				t.Fatalf("%s commits on main, want 2", n)
			}
		})
	}
}

// What ObjectStore is for: a push's connectivity check lists the refs of
// the repository's own alternate (core.alternateRefsCommand) with the
// stock layout, and not at all with the relocated one. The command here
// leaves a mark where it runs.
func TestRelocatedSkipsAlternateRefs(t *testing.T) {
	for _, relocated := range []bool{false, true} {
		w := t.TempDir()
		bare := configured(t, w, relocated)
		mark := filepath.Join(w, "ran")
		gitIn(t, bare, "config", "core.alternateRefsCommand", "touch "+mark+"; true")
		client := filepath.Join(w, "c")
		gitIn(t, w, "init", "-q", "-b", "main", client)
		gitIn(t, client, "commit", "-q", "--allow-empty", "-m", "one")
		gitIn(t, client, "push", "-q", bare, "main")
		_, err := os.Stat(mark)
		if ran := err == nil; ran == relocated {
			t.Errorf("relocated %v: alternate refs listed %v, want %v", relocated, ran, !relocated)
		}
	}
}

func mustRelocate(t *testing.T, dir string) {
	t.Helper()
	if moved, err := Relocate(dir); err != nil || !moved {
		t.Fatalf("Relocate = %v, %v", moved, err)
	}
}

func symlink(t *testing.T, target, at string) {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
}

// COLLAB_ODB_LINK=off keeps the stock layout: Relocate moves nothing.
func TestRelocateOff(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "objects"), 0o750); err != nil {
		t.Fatal(err)
	}
	t.Setenv(LinkVar, "off")
	if moved, err := Relocate(dir); moved || err != nil || !Unrelocated(dir) {
		t.Fatalf("Relocate = %v, %v; the objects moved: %v", moved, err, !Unrelocated(dir))
	}
	t.Setenv(LinkVar, "")
	if moved, err := Relocate(dir); !moved || err != nil || Unrelocated(dir) {
		t.Fatalf("Relocate = %v, %v with the switch on", moved, err)
	}
}
