package fastpath

import (
	"reflect"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/layout"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args string
		env  map[string]string
		ok   bool
		want Call
	}{
		{"--root /r hook pre-receive", nil, true, Call{Globals{"/r", ""}, "hook", []string{"pre-receive"}}},
		{"--root=/r --url http://x hook merge-scan", nil, true, Call{Globals{"/r", "http://x"}, "hook", []string{"merge-scan"}}},
		{"hook post-receive", map[string]string{"COLLAB_ROOT": "/e", "COLLAB_URL": "http://u"}, true, Call{Globals{"/e", "http://u"}, "hook", []string{"post-receive"}}},
		{"--root /r hook proc-receive", map[string]string{"COLLAB_ROOT": "/e"}, true, Call{Globals{"/r", ""}, "hook", []string{"proc-receive"}}},
		{"hook pre-receive", map[string]string{"COLLAB_ROOT": ""}, true, Call{Globals{"", ""}, "hook", []string{"pre-receive"}}},
		{"serve --as alice", nil, true, Call{Globals{layout.DefaultRoot, ""}, "serve", []string{"alice"}}},
		{"--root /r keys-command git ssh-ed25519 AAAA", nil, true, Call{Globals{"/r", ""}, "keys-command", []string{"ssh-ed25519", "AAAA"}}},
		// Everything else goes to the full parser.
		{"", nil, false, Call{}},
		{"--help", nil, false, Call{}},
		{"--root", nil, false, Call{}},
		{"-root /r hook pre-receive", nil, false, Call{}},
		{"--verbose hook pre-receive", nil, false, Call{}},
		{"hook", nil, false, Call{}},
		{"hook update", nil, false, Call{}},
		{"hook pre-receive extra", nil, false, Call{}},
		{"serve --as=alice", nil, false, Call{}},
		{"serve --as", nil, false, Call{}},
		{"serve --as --help", nil, false, Call{}},
		{"serve alice", nil, false, Call{}},
		{"keys-command git ssh-ed25519", nil, false, Call{}},
		{"keys-command git ssh-ed25519 AAAA more", nil, false, Call{}},
		{"user add alice", nil, false, Call{}},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		got, ok := Parse(append([]string{"collab-hook"}, strings.Fields(tc.args)...), lookup)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q, %v) = %+v, %v; want %+v, %v", tc.args, tc.env, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDirect(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"/srv/collab/hooks/pre-receive"}, []string{"/srv/collab/hooks/pre-receive", "hook", "pre-receive"}},
		{[]string{"hooks/proc-receive"}, []string{"hooks/proc-receive", "hook", "proc-receive"}},
		{[]string{"post-receive"}, []string{"post-receive", "hook", "post-receive"}},
		// Through the post-receive gate: the interpreter's fd, then the hook.
		{[]string{"/proc/self/fd/4", "/srv/collab/hooks/post-receive"}, []string{"/srv/collab/hooks/post-receive", "hook", "post-receive"}},
		{[]string{"/proc/self/fd/4", "/srv/collab/hooks/update"}, nil},
		{[]string{"/usr/bin/collab-hook-fast", "/srv/collab/hooks/post-receive"}, nil},
		// Not git running a hook of the root's directory.
		{[]string{"/srv/collab/hooks/update"}, nil},
		{[]string{"/srv/collab/hooks/merge-scan"}, nil},
		{[]string{"/usr/bin/collab-hook-fast"}, nil},
		{[]string{"/srv/collab/hooks/pre-receive", "extra"}, nil},
		{[]string{"/usr/bin/collab-hook-fast", "hook", "pre-receive"}, nil},
		{nil, nil},
	} {
		got, ok := Direct(tc.args)
		if ok != (tc.want != nil) || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Direct(%q) = %q, %v; want %q", tc.args, got, ok, tc.want)
		}
	}
}

func TestRoot(t *testing.T) {
	env := func(root string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k == "COLLAB_ROOT" && root != "" {
				return root, true
			}
			return "", false
		}
	}
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"collab-hook", "fsck"}, "", layout.DefaultRoot},
		{[]string{"collab-hook", "fsck"}, "/e", "/e"},
		{[]string{"collab-hook", "--root", "/a", "fsck"}, "/e", "/a"},
		{[]string{"collab-hook", "--root=/a", "serve", "--as", "x"}, "", "/a"},
		{[]string{"collab-hook", "user", "add", "x", "--root", "/b"}, "", "/b"},
		{[]string{"collab-hook", "issue", "--", "--root", "/b"}, "/e", "/e"},
		{[]string{"/srv/c/hooks/pre-receive"}, "/srv/c", "/srv/c"},
	} {
		if got := Root(tc.args, env(tc.env)); got != tc.want {
			t.Errorf("Root(%q) with COLLAB_ROOT %q = %q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}
