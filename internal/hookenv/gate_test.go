package hookenv

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
)

func TestGateShuts(t *testing.T) {
	g, err := OpenGate([]byte("#!/proc/self/fd/4\n"))
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
	tip := strings.Repeat("a", 40)
	main := Followed{Branch: "main", Tip: tip, IDs: []string{"0123abcd", "fedc9876"}}
	long := Followed{Branch: "main", Tip: tip, IDs: []string{strings.Repeat("b", maxScanned)}}
	for _, tc := range []struct {
		name     string
		followed []Followed
		want     map[string]Followed
	}{
		{"none", nil, map[string]Followed{}},
		{"some", []Followed{main, {Branch: "release/1.0"}}, map[string]Followed{"main": main, "release/1.0": {Branch: "release/1.0"}}},
		{"too long to list in full: names only", []Followed{long}, map[string]Followed{"main": {Branch: "main"}}},
		{"too many to name", []Followed{{Branch: strings.Repeat("b", maxScanned+1)}}, nil},
	} {
		got := Decode(env(ScannedEnv(tc.followed))).Scanned
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	for _, v := range []string{"", "main ..bad", "main a~b", "main:xyz:", "main:-:ABCD", "main:-:ab,,cd", "main:" + tip} {
		if got := Decode(env([]string{PostReceiveVar + "=" + v})).Scanned; got != nil {
			t.Errorf("%q decodes as %v, want none", v, got)
		}
	}
}

func TestPostReceiveIdle(t *testing.T) {
	oid := strings.Repeat("1", 40)
	up := func(ref, newOID string) pushcheck.Update { return pushcheck.Update{Old: oid, New: newOID, Ref: ref} }
	// new's only commit names no patch, and comes right after oid.
	newOID := strings.Repeat("2", 40)
	read := func(o string) ([]byte, error) {
		if o == newOID {
			return []byte("tree " + oid + "\nparent " + oid + "\nauthor A\n\nunrelated\n"), nil
		}
		return nil, git.ErrNotLoose
	}
	scanned := Handoff{Scanned: map[string]Followed{"main": {Branch: "main"}}}
	unmerged := Handoff{Scanned: map[string]Followed{"main": {Branch: "main", Tip: oid, IDs: []string{"abcdef12"}}}}
	for _, tc := range []struct {
		name     string
		h        Handoff
		us       []pushcheck.Update
		want     bool
		unmerged int
	}{
		{"no gate", Handoff{}, []pushcheck.Update{up("refs/for/main", oid)}, false, 0},
		{"a refs/for push", scanned, []pushcheck.Update{up("refs/for/main", oid)}, true, 0},
		{"a branch nothing follows", scanned, []pushcheck.Update{up("refs/heads/dev", oid)}, true, 0},
		{"a tag named as a followed branch", scanned, []pushcheck.Update{up("refs/tags/main", oid)}, true, 0},
		{"a followed branch deleted", scanned, []pushcheck.Update{up("refs/heads/main", git.ZeroOID)}, true, 0},
		{"a followed branch moved", scanned, []pushcheck.Update{up("refs/heads/dev", oid), up("refs/heads/main", newOID)}, false, 0},
		{"nothing followed", Handoff{Scanned: map[string]Followed{}}, []pushcheck.Update{up("refs/heads/main", oid)}, true, 0},
		{"a followed branch moved, unmerged", unmerged, []pushcheck.Update{up("refs/heads/dev", oid), up("refs/heads/main", newOID)}, true, 1},
		{"a followed branch moved by a commit that was there", unmerged, []pushcheck.Update{up("refs/heads/main", strings.Repeat("3", 40))}, false, 0},
	} {
		got, us := tc.h.PostReceiveIdle(tc.us, read)
		if got != tc.want || len(us) != tc.unmerged {
			t.Errorf("%s: %v, %d unmerged, want %v, %d", tc.name, got, len(us), tc.want, tc.unmerged)
		}
	}
}

// TestUnmerged: a move merges nothing for certain only from the scan's
// tip, through commits read (new to the repository) that name none of the
// branch's open patches.
func TestUnmerged(t *testing.T) {
	o := func(c string) string { return strings.Repeat(c, 40) }
	id := "0123456789abcdef0123456789abcdef01234567"
	commits := map[string]string{
		o("2"): "tree " + o("9") + "\nparent " + o("1") + "\nauthor A\n\nplain\n",
		o("3"): "tree " + o("9") + "\nparent " + o("2") + "\nparent " + o("4") + "\nauthor A\n\nmerge\n",
		o("4"): "tree " + o("9") + "\nparent " + o("1") + "\nauthor A\n\nside\n\nPatch: " + id + "\n",
		o("5"): "tree " + o("9") + "\nparent " + o("1") + "\nauthor A\n\nChange-Id: I" + strings.ToUpper(id) + "\n",
		o("6"): "tree " + o("9") + "\nparent " + o("7") + "\nauthor A\n\nabove a commit that was there\n",
		o("8"): "tree " + o("9") + "\nparent " + o("1") + "\nauthor A\nencoding ISO-8859-1\n\nlatin\n",
		o("a"): "tree " + o("9") + "\nparent " + o("2") + "\nauthor A\n\nPatch: 00000000\n",
	}
	read := func(oid string) ([]byte, error) {
		if c, ok := commits[oid]; ok {
			return []byte(c), nil
		}
		return nil, git.ErrNotLoose
	}
	main := Followed{Branch: "main", Tip: o("1"), IDs: []string{id}}
	for _, tc := range []struct {
		name string
		f    Followed
		new  string
		read CommitReader
		want bool
	}{
		{"one plain commit", main, o("2"), read, true},
		{"a trailer of another patch", main, o("a"), read, true},
		{"not from the scan's tip", Followed{Branch: "main", Tip: o("2"), IDs: main.IDs}, o("2"), read, false},
		{"no tip handed off", Followed{Branch: "main", IDs: main.IDs}, o("2"), read, false},
		{"nothing to read with", main, o("2"), nil, false},
		{"a merge bringing the patch's trailer", main, o("3"), read, false},
		{"its Change-Id", main, o("5"), read, false},
		{"above a commit that was there", main, o("6"), read, false},
		{"another encoding", main, o("8"), read, false},
		{"a commit that was there", main, o("7"), read, false},
	} {
		u := pushcheck.Update{Old: o("1"), New: tc.new, Ref: "refs/heads/main"}
		if got := Unmerged(tc.f, u, tc.read); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// A chain of plain commits: as long as git writes loose, and longer.
	for _, n := range []int{maxUnmergedWalk, maxUnmergedWalk + 1} {
		chain := map[string]string{}
		parent := o("1")
		for i := range n {
			oid := fmt.Sprintf("%040x", i+100)
			chain[oid] = "tree " + o("9") + "\nparent " + parent + "\n\nplain\n"
			parent = oid
		}
		read := func(oid string) ([]byte, error) { return []byte(chain[oid]), nil }
		u := pushcheck.Update{Old: o("1"), New: parent, Ref: "refs/heads/main"}
		if got := Unmerged(main, u, read); got != (n == maxUnmergedWalk) {
			t.Errorf("%d commits: %v", n, got)
		}
	}
}

func TestPass(t *testing.T) {
	topic := []pushcheck.Update{{Old: git.ZeroOID, New: strings.Repeat("a", 40), Ref: "refs/heads/topic"}}
	forMain := []pushcheck.Update{{Old: git.ZeroOID, New: strings.Repeat("a", 40), Ref: "refs/for/main"}}
	none := func(string) string { return "" }
	broken := fmt.Errorf("no gate")
	for _, tc := range []struct {
		name    string
		scanned map[string]Followed
		updates []pushcheck.Update
		shutErr error
		want    Passed
		shut    bool
	}{
		{"no list handed off: the gate stays open", nil, topic, nil, Passed{Prefetch: true}, false},
		{"a branch nothing follows: shut", map[string]Followed{}, topic, nil, Passed{Skipped: true}, true},
		{"a gate that will not shut: post-receive runs, its reads start", map[string]Followed{}, topic, broken, Passed{ShutErr: broken, Prefetch: true}, true},
		{"refs/for: shut, and proc-receive's reads start", map[string]Followed{}, forMain, nil, Passed{Skipped: true, Prefetch: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shut := false
			got := Handoff{Scanned: tc.scanned}.Pass(tc.updates, none, func() error { shut = true; return tc.shutErr })
			if !reflect.DeepEqual(got, tc.want) || shut != tc.shut {
				t.Errorf("Pass = %+v (shut %v), want %+v (shut %v)", got, shut, tc.want, tc.shut)
			}
		})
	}
}
