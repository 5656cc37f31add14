package ops

import (
	"math"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushcheck"
	"github.com/collab-forge/collab/internal/pushlimit"
)

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string // "" for success, else a substring of the refusal
		chk  func(Options) bool
	}{
		{in: nil, chk: func(o Options) bool { return o.Title == nil && o.Draft == nil }},
		{in: []string{"draft"}, chk: func(o Options) bool { return o.Draft != nil && *o.Draft }},
		{in: []string{"draft=false"}, chk: func(o Options) bool { return o.Draft != nil && !*o.Draft }},
		{in: []string{"title=A", "title=B"}, chk: func(o Options) bool { return *o.Title == "B" }},
		{in: []string{"description=", "topic=t"}, chk: func(o Options) bool { return *o.Description == "" && *o.Topic == "t" }},
		{in: []string{"fixes=ABCD", "fixes=12345678"}, chk: func(o Options) bool { return len(o.Fixes) == 2 && o.Fixes[0] == "abcd" }},
		{in: []string{"lease=7"}, chk: func(o Options) bool { return o.Leases[0] == Lease{Token: 7} }},
		{in: []string{"lease=abcd:7"}, chk: func(o Options) bool { return o.Leases[0] == Lease{Issue: "abcd", Token: 7} }},
		{in: []string{"patch=abcdef"}, chk: func(o Options) bool { return o.Patch == "abcdef" }},
		{in: []string{"colour=red"}, want: "unknown push option \"colour\"; known options: title="},
		{in: []string{"title"}, want: "title needs a value"},
		{in: []string{"title=a\nb"}, want: "one line"},
		{in: []string{"title=\x1b]0;pwned\x07"}, want: `push option title holds the control character \x1b at byte 0`},
		{in: []string{"topic=a\tb"}, want: `push option topic holds the control character \x09`},
		{in: []string{"title=" + strings.Repeat("x", pushcheck.MaxTitle+1)}, want: "too long"},
		{in: []string{"draft=maybe"}, want: "want true or false"},
		{in: []string{"patch=-rf"}, want: "want a patch id"},
		{in: []string{"fixes=xyz"}, want: "want an issue id"},
		{in: []string{"lease=0"}, want: "lease=TOKEN"},
		{in: []string{"lease=ab:1"}, want: "lease=TOKEN"},
		{in: []string{"lease=abcd:x"}, want: "lease=TOKEN"},
		{in: []string{"title=\xff"}, want: "not valid UTF-8"},
	} {
		o, err := pushcheck.ParseOptions(tc.in)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) || fault.KindOf(err) != fault.Usage {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.want)
			}
			continue
		}
		if err != nil || !tc.chk(o) {
			t.Errorf("%q: %+v, %v", tc.in, o, err)
		}
	}
}

func TestCheckTip(t *testing.T) {
	oid := strings.Repeat("a", 40)
	for _, tc := range []struct {
		c    git.Commit
		want string
	}{
		{git.Commit{Message: []byte("ok\n")}, ""},
		{git.Commit{Message: []byte("ok\n"), Patch: []string{"0123456789abcdef"}, Fixes: []string{"abcd"}}, ""},
		{git.Commit{Patch: []string{"0123456789abcdef", "0123456789abcdee"}}, "2 Patch: trailers"},
		{git.Commit{Patch: []string{"00000000"}}, "all zeros"},
		{git.Commit{Patch: []string{"0123456789ABCDEF"}}, "not a patch id"},
		{git.Commit{Patch: []string{"abc"}}, "not a patch id"},
		{git.Commit{Patch: []string{"I8f0691ba7517a498e096efa4bb392bcc4d854d0"}}, "not a patch id"},
		{git.Commit{Fixes: []string{"#12"}}, "not an issue id"},
		{git.Commit{Fixes: []string{"ABCD"}}, "not an issue id"},
		{git.Commit{Message: []byte("caf\xe9\n")}, "not valid UTF-8"},
		{git.Commit{Message: []byte(strings.Repeat("x", 64<<10+1))}, "too long"},
	} {
		tc.c.OID = oid
		err := CheckTip(tc.c, pushlimit.Defaults().MessageBytes)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}

func TestSubjectBody(t *testing.T) {
	for _, tc := range []struct{ msg, subject, body string }{
		{"One\n", "One", ""},
		{"\nOne\ntwo\n\nBody.\n", "One two", "Body."},
		{"S\n\nBody\n\nMore\n\nPatch: abcdabcd\nFixes: 1234\n", "S", "Body\n\nMore"},
		{"S\n\nNot: a trailer block\nbecause this line\n", "S", "Not: a trailer block\nbecause this line"},
		{"S\r\n\r\nB\r\n", "S", "B"},
		{"OSC \x1b]0;pwned\x07 CSI \x1b[2J\n\nB\x1b\n", `OSC \x1b]0;pwned\x07 CSI \x1b[2J`, "B\x1b"},
	} {
		if s, b := Subject(tc.msg), Body(tc.msg); s != tc.subject || b != tc.body {
			t.Errorf("%q: subject %q body %q, want %q %q", tc.msg, s, b, tc.subject, tc.body)
		}
	}
}

func TestHookHint(t *testing.T) {
	h := HookHint("ssh git@h", "abc")
	want := `f=$(git rev-parse --git-path hooks/commit-msg); ssh git@h hooks commit-msg > "$f" && chmod +x "$f"; git commit --amend --no-edit --trailer "Patch: abc"`
	if h != want {
		t.Errorf("HookHint = %s", h)
	}
}

func TestBaseOfAndUpdates(t *testing.T) {
	for in, want := range map[string]string{"refs/for/main": "main", "refs/for/refs/heads/rel/1": "rel/1", "refs/for/": "", "refs/for/-x": "", "refs/for/caf\xe9": "", "refs/for/a\x1b[31m": "", "refs/for/" + strings.Repeat("b", 1025): ""} {
		got, err := pushcheck.BaseOf(in)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("pushcheck.BaseOf(%q) = %q, %v", in, got, err)
		}
	}
	z, o := git.ZeroOID, strings.Repeat("1", 40)
	us, err := pushcheck.ReadUpdates(strings.NewReader(z + " " + o + " refs/heads/main\n\n"))
	if err != nil || len(us) != 1 || us[0].Ref != "refs/heads/main" {
		t.Errorf("pushcheck.ReadUpdates = %v, %v", us, err)
	}
	if _, err := pushcheck.ReadUpdates(strings.NewReader("x y z\n")); err == nil {
		t.Error("bad update line accepted")
	}
}

// pre-receive refuses a push past a limit whole, before it looks at
// anything else, with one line naming the setting; the hand-off's limits
// need no database (a push touching no branch reads no branch rules).
func TestPreReceiveLimits(t *testing.T) {
	o := strings.Repeat("1", 40)
	lim := pushlimit.Defaults()
	lim.ForRefs, lim.Refs, lim.Options = 2, 4, 1
	lim.RepoRefs = math.MaxInt64 // no repository here to count in
	e := &Push{Repo: "demo.git", Principal: "alice", WriteChecked: true, Limits: &lim}
	up := func(refs ...string) []Update {
		var us []Update
		for _, r := range refs {
			us = append(us, Update{Old: git.ZeroOID, New: o, Ref: r})
		}
		return us
	}
	for _, tc := range []struct {
		us   []Update
		opts []string
		want string
	}{
		{up("refs/for/a", "refs/for/b", "refs/tags/x", "refs/tags/t"), []string{"title=T"}, ""},
		{up("refs/for/a", "refs/for/b", "refs/for/c"), nil, "3 refs/for refs in one push, at most 2 (setting push_max_for_refs)"},
		{up("refs/heads/a", "refs/heads/b", "refs/heads/c", "refs/heads/d", "refs/heads/e"), nil, "5 refs in one push, at most 4"},
		{up("refs/for/a"), []string{"title=T", "topic=x"}, "2 push options, at most 1"},
	} {
		err := e.PreReceive(t.Context(), tc.us, tc.opts)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.us, err)
		case tc.want != "" && (err == nil || fault.KindOf(err) != fault.TooLarge || !strings.Contains(fault.Public(err), tc.want)):
			t.Errorf("%v: %v, want %q", tc.us, err, tc.want)
		}
	}
}
