package hookenv

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

// The late hand-off counts only once sealed, carries only what serve
// reads from the database, and decodes as the environment would have.
func TestLate(t *testing.T) {
	l, err := OpenLate()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := ReadLate(l.Git.Fd()); got != nil || l.Sealed() {
		t.Errorf("unsealed: %q, sealed %v; want none", got, l.Sealed())
	}
	lim := pushlimit.Defaults()
	h := Handoff{Principal: "alice", Root: "/srv/collab", URL: "http://x",
		Checked: Check{Level: access.Write, Repo: "demo.git", At: time.UnixMilli(1795946400000)},
		Limits:  &lim, Rules: map[string]pushcheck.Rule{}}
	pairs := append(h.Pairs(), ScannedEnv(nil)...)
	// Only late variables go in, and no value across lines.
	if err := l.Seal(append(pairs, PrincipalVar+"=mallory", RulesVar+"=main:none\n"+AccessVar+"=admin demo.git 1")); err != nil {
		t.Fatal(err)
	}
	if !l.Sealed() {
		t.Error("Seal did not seal")
	}
	got := ReadLate(l.Git.Fd())
	want := map[string]string{}
	for _, kv := range pairs {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sealed: %q\nwant %q", got, want)
	}
	d := Decode(func(k string) string {
		if late[k] {
			return got[k]
		}
		return Getenv(h.Encode())(k)
	})
	if !d.Stamped("demo.git", h.Checked.At) || d.Scanned == nil || d.Principal != "alice" {
		t.Errorf("decoded %+v: not stamped as serve checked", d)
	}
	// Anything else at the fd is not a hand-off.
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := ReadLate(f.Fd()); got != nil {
		t.Errorf("%s: %q", os.DevNull, got)
	}
	if got := ReadLate(1 << 20); got != nil {
		t.Errorf("a closed fd: %q", got)
	}
}

// ProcessEnv takes the late variables from the file HandoffFDVar names
// and from nowhere else, once the variable is there.
func TestProcessEnv(t *testing.T) {
	l, err := OpenLate()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Setenv(AccessVar, "admin demo.git 1")
	t.Setenv(PrincipalVar, "alice")
	if got := ProcessEnv()(AccessVar); got != "admin demo.git 1" {
		t.Errorf("without the file: %q", got)
	}
	t.Setenv(HandoffFDVar, strconv.Itoa(int(l.Git.Fd())))
	if got := ProcessEnv()(AccessVar); got != "" {
		t.Errorf("unsealed: %q, want none", got)
	}
	if err := l.Seal([]string{AccessVar + "=write demo.git 2"}); err != nil {
		t.Fatal(err)
	}
	getenv := ProcessEnv()
	if got := getenv(AccessVar); got != "write demo.git 2" {
		t.Errorf("sealed: %q", got)
	}
	if got := getenv(PrincipalVar); got != "alice" {
		t.Errorf("principal: %q", got)
	}
}
