package hookenv

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

func env(kv ...string) func(string) string { return Getenv(kv) }

func TestRoundTrip(t *testing.T) {
	at := time.UnixMilli(1795946400000)
	h := Handoff{Principal: "alice", Root: "/srv/collab", URL: "http://x", Checked: Check{Level: access.Write, Repo: "org/demo.git", At: at}}
	got := Decode(env(h.Encode()...))
	if got.Principal != h.Principal || got.Root != h.Root || got.URL != h.URL || got.Checked.Level != h.Checked.Level ||
		got.Checked.Repo != h.Checked.Repo || !got.Checked.At.Equal(at) {
		t.Errorf("Decode(Encode(h)) = %+v, want %+v", got, h)
	}
	if want := "COLLAB_ACCESS=write org/demo.git 1795946400000"; h.Encode()[5] != want {
		t.Errorf("Encode()[5] = %q, want %q", h.Encode()[5], want)
	}
	committer := env(h.Encode()...)
	if p := PusherOf(committer("GIT_COMMITTER_NAME"), committer("GIT_COMMITTER_EMAIL")); p != "alice" {
		t.Errorf("PusherOf(Encode) = %q", p)
	}
	for _, id := range [][2]string{{"Ada", "ada@example.com"}, {"", "@collab.invalid"}, {"bob", "alice@collab.invalid"}} {
		if p := PusherOf(id[0], id[1]); p != access.Unknown {
			t.Errorf("PusherOf(%q) = %q", id, p)
		}
	}
	if d := Decode(env()); d.Principal != access.Local || d.Checked.Repo != "" || d.MergeScanBudget != 0 {
		t.Errorf("Decode(empty) = %+v", d)
	}
	if d := Decode(env("COLLAB_MERGE_SCAN_BUDGET=50")); d.MergeScanBudget != 50 {
		t.Errorf("budget = %d", d.MergeScanBudget)
	}
	lim := pushlimit.Defaults()
	lim.ForRefs = 3
	h.Limits = &lim
	if got := Decode(env(h.Encode()...)); got.Limits == nil || *got.Limits != lim {
		t.Errorf("limits: Decode(Encode(h)) = %+v, want %+v", got.Limits, lim)
	}
	if d := Decode(env("COLLAB_PUSH_LIMITS=1 2 3")); d.Limits != nil {
		t.Errorf("malformed limits decoded as %+v", d.Limits)
	}
	for _, name := range []string{"COLLAB_PRINCIPAL", "COLLAB_ROOT", "COLLAB_URL", "COLLAB_ACCESS", "COLLAB_PUSH_LIMITS", "COLLAB_BRANCH_RULES"} {
		if !Owned(name) {
			t.Errorf("Owned(%s) = false", name)
		}
	}
	if Owned("COLLAB_JOURNAL_SOCKET") {
		t.Error("Owned(COLLAB_JOURNAL_SOCKET)")
	}
}

func TestWriteChecked(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	checked := func(l access.Level, repo string, at time.Time) string {
		return Handoff{Checked: Check{Level: l, Repo: repo, At: at}}.Encode()[4]
	}
	at := func(d time.Duration) string { return checked(access.Write, "org/demo.git", now.Add(d)) }
	for _, tc := range []struct {
		principal, checked string
		want               bool
	}{
		{"", "", true}, // the operator, pushing through a path
		{"alice", at(0), true},
		{"alice", at(-CheckedFresh), true},
		{"alice", checked(access.Admin, "org/demo.git", now), true},
		{"alice", "", false},
		{"alice", checked(access.Read, "org/demo.git", now), false},
		{"alice", checked(access.None, "org/demo.git", now), false},
		{"alice", checked(access.Write, "org/other.git", now), false},
		{"alice", at(-CheckedFresh - time.Millisecond), false}, // a long upload: ask again
		{"alice", at(time.Minute), false},                      // from the future
		{"alice", "COLLAB_ACCESS=write org/demo.git", false},
		{"alice", "COLLAB_ACCESS=write org/demo.git soon", false},
		{"alice", "COLLAB_ACCESS=owner org/demo.git 1", false},
		{"alice", "COLLAB_ACCESS=write  org/demo.git x", false},
	} {
		h := Decode(env("COLLAB_PRINCIPAL="+tc.principal, tc.checked))
		if got := h.WriteChecked("org/demo.git", now); got != tc.want {
			t.Errorf("WriteChecked(%q, %q) = %v, want %v", tc.principal, tc.checked, got, tc.want)
		}
	}
}

// Stamped: serve's hand-off covers pre-receive only whole (fresh write
// check of this repository, limits and rules) and never for the local
// principal; "no rules" is "-", never an absent or empty variable.
func TestStamped(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	lim := pushlimit.Defaults()
	full := Handoff{Principal: "alice", Checked: Check{Level: access.Write, Repo: "demo.git", At: now},
		Limits: &lim, Rules: map[string]pushcheck.Rule{}}
	for _, tc := range []struct {
		name string
		h    func(h Handoff) Handoff
		at   time.Time
		want bool
	}{
		{"whole", func(h Handoff) Handoff { return h }, now, true},
		{"with rules", func(h Handoff) Handoff {
			h.Rules = map[string]pushcheck.Rule{"main": {Branch: "main"}}
			return h
		}, now, true},
		{"no rules handed off", func(h Handoff) Handoff { h.Rules = nil; return h }, now, false},
		{"no limits", func(h Handoff) Handoff { h.Limits = nil; return h }, now, false},
		{"read only", func(h Handoff) Handoff { h.Checked.Level = access.Read; return h }, now, false},
		{"other repository", func(h Handoff) Handoff { h.Checked.Repo = "other.git"; return h }, now, false},
		{"stale", func(h Handoff) Handoff { return h }, now.Add(CheckedFresh + time.Second), false},
		{"local", func(h Handoff) Handoff { h.Principal = ""; h.Checked = Check{}; return h }, now, false},
	} {
		h := Decode(env(tc.h(full).Encode()...))
		if got := h.Stamped("demo.git", tc.at); got != tc.want {
			t.Errorf("%s: Stamped = %v, want %v (%+v)", tc.name, got, tc.want, h)
		}
	}
	if h := Decode(env(full.Encode()...)); h.Rules == nil || len(h.Rules) != 0 {
		t.Errorf("no rules decoded as %v", h.Rules)
	}
	if h := Decode(env("COLLAB_BRANCH_RULES=")); h.Rules != nil {
		t.Errorf("empty rules decoded as %v", h.Rules)
	}
}

// Getenv reads another process's environment as os.Getenv reads this
// one's: a child of this test, started with a repeated name, says which
// value os.Getenv takes.
func TestGetenv(t *testing.T) {
	if os.Getenv("HOOKENV_TEST_CHILD") != "" {
		fmt.Print("os.Getenv=" + os.Getenv("HOOKENV_TEST_DUP") + "\n")
		return
	}
	environ := []string{"A=1", "B=", "C=x=y", "junk", "A=2"}
	for _, tc := range []struct{ key, want string }{
		{"A", "1"}, {"B", ""}, {"C", "x=y"}, {"junk", ""}, {"missing", ""},
	} {
		if got := Getenv(environ)(tc.key); got != tc.want {
			t.Errorf("Getenv(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	// os.StartProcess, unlike os/exec (which keeps a name's last pair),
	// passes the pairs as they are, as git passes its own to a hook.
	dup := []string{"HOOKENV_TEST_DUP=first", "HOOKENV_TEST_DUP=second"}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.StartProcess(os.Args[0], []string{os.Args[0], "-test.run=^TestGetenv$"}, &os.ProcAttr{
		Env: append(append(os.Environ(), "HOOKENV_TEST_CHILD=1"), dup...), Files: []*os.File{nil, w, os.Stderr}})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(r)
	r.Close()
	if st, err := p.Wait(); err != nil || !st.Success() {
		t.Fatalf("child: %v %v: %s", st, err, out)
	}
	if want := "os.Getenv=" + Getenv(dup)("HOOKENV_TEST_DUP") + "\n"; !strings.Contains(string(out), want) {
		t.Errorf("os.Getenv read a repeated name otherwise: %s; Getenv says %q", out, want)
	}
}
