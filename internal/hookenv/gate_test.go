package hookenv

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
)

func TestGateShuts(t *testing.T) {
	g, err := OpenGate(4)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	st, err := g.Stat()
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("open gate: %v, %v", st.Mode(), err)
	}
	b, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(g.Fd())))
	if err != nil || string(b) != "#!/proc/self/fd/4\n" {
		t.Fatalf("gate holds %q, %v", b, err)
	}
	if err := shutGate(int(g.Fd())); err != nil {
		t.Fatal(err)
	}
	if st, err := g.Stat(); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("shut gate: %v, %v", st.Mode(), err)
	}
	// Anything else at that fd is left as it is.
	f, err := os.CreateTemp(t.TempDir(), "hook")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Chmod(0o700); err != nil {
		t.Fatal(err)
	}
	if err := shutGate(int(f.Fd())); err == nil || !strings.Contains(err.Error(), "is "+f.Name()) {
		t.Fatalf("shut a regular file: %v", err)
	}
	if st, err := f.Stat(); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("regular file's mode: %v, %v", st.Mode(), err)
	}
}

func TestScanned(t *testing.T) {
	env := func(pairs []string) func(string) string { return Getenv(pairs) }
	for _, tc := range []struct {
		name     string
		branches []string
		want     map[string]bool
	}{
		{"none", nil, map[string]bool{}},
		{"some", []string{"main", "release/1.0"}, map[string]bool{"main": true, "release/1.0": true}},
		{"too many to list", []string{strings.Repeat("b", maxScanned+1)}, nil},
	} {
		got := Decode(env(ScannedEnv(tc.branches))).Scanned
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %d branches, want %v", tc.name, len(got), tc.want)
		}
	}
	for _, v := range []string{"", "main ..bad", "main a~b"} {
		if got := Decode(env([]string{PostReceiveVar + "=" + v})).Scanned; got != nil {
			t.Errorf("%q decodes as %v, want none", v, got)
		}
	}
}

func TestPostReceiveIdle(t *testing.T) {
	oid := strings.Repeat("1", 40)
	up := func(ref, newOID string) pushcheck.Update { return pushcheck.Update{Old: oid, New: newOID, Ref: ref} }
	scanned := Handoff{Scanned: map[string]bool{"main": true}}
	for _, tc := range []struct {
		name string
		h    Handoff
		us   []pushcheck.Update
		want bool
	}{
		{"no gate", Handoff{}, []pushcheck.Update{up("refs/for/main", oid)}, false},
		{"a refs/for push", scanned, []pushcheck.Update{up("refs/for/main", oid)}, true},
		{"a branch nothing follows", scanned, []pushcheck.Update{up("refs/heads/dev", oid)}, true},
		{"a tag named as a followed branch", scanned, []pushcheck.Update{up("refs/tags/main", oid)}, true},
		{"a followed branch deleted", scanned, []pushcheck.Update{up("refs/heads/main", git.ZeroOID)}, true},
		{"a followed branch moved", scanned, []pushcheck.Update{up("refs/heads/dev", oid), up("refs/heads/main", oid)}, false},
		{"nothing followed", Handoff{Scanned: map[string]bool{}}, []pushcheck.Update{up("refs/heads/main", oid)}, true},
	} {
		if got := tc.h.PostReceiveIdle(tc.us); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
