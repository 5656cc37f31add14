package fsck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/forge"
)

// fsck names what is too open, tightens it (and nothing else), and finds
// nothing the second time.
func TestModes(t *testing.T) {
	dir := t.TempDir()
	files := []struct {
		rel  string
		mode os.FileMode
		want os.FileMode
	}{
		{".", 0o755, 0o750},
		{"forge.key", 0o640, 0o600},
		{"collab.db", 0o644, 0o640},
		{"collab.db-wal", 0o660, 0o640},
		{"collab.db-shm", 0o600, 0o600},
		{"repos", 0o777, 0o750},
		{"repos/demo.git", 0o775 | os.ModeSetgid, 0o750 | os.ModeSetgid}, // as git leaves a shared repository
		{"repos/demo.git/HEAD", 0o664, 0o640},
		{"repos/demo.git/hooks", 0o750, 0o750},
		{"repos/demo.git/hooks/pre-receive", 0o755, 0o750},
		{"log", 0o700, 0o700},
		{"log/collab-hook.log", 0o644, 0o640},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.rel)
		if strings.HasSuffix(f.rel, ".git") || f.rel == "repos" || f.rel == "log" || f.rel == "." || strings.HasSuffix(f.rel, "hooks") {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for i := len(files) - 1; i >= 0; i-- { // children first, so parents can be walked
		if err := os.Chmod(filepath.Join(dir, files[i].rel), files[i].mode); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	c := &Checker{Root: forge.Root{Dir: dir}, Out: &out}
	if err := c.modes(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"the root: mode 0755 is looser than 0750; tightened (repaired)",
		"forge.key: mode 0640 is looser than 0600; tightened (repaired)",
		"collab.db: mode 0644 is looser than 0640; tightened (repaired)",
		"collab.db-wal: mode 0660 is looser than 0640; tightened (repaired)",
		"repos: mode 0777 is looser than 0750; tightened (repaired)",
		"repos/: 3 files and directories were writable by the group or open to others; tightened (repaired)",
		"log/: 1 files and directories were writable by the group or open to others; tightened (repaired)",
	} {
		if !strings.Contains(out.String(), want+"\n") {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if c.Found != 7 || c.Repaired != 7 {
		t.Errorf("found %d, repaired %d; want 7, 7", c.Found, c.Repaired)
	}
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(dir, f.rel))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeSetgid); got != f.want {
			t.Errorf("%s: mode %v, want %04o", f.rel, got, f.want)
		}
	}
	again := &Checker{Root: forge.Root{Dir: dir}, Out: &out}
	if err := again.modes(); err != nil || again.Found != 0 {
		t.Errorf("second run: %d found, %v", again.Found, err)
	}
}
