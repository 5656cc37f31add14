package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/forge"
)

func TestParseFast(t *testing.T) {
	for _, tc := range []struct {
		args string
		env  map[string]string
		ok   bool
		want fastCall
	}{
		{"--root /r hook pre-receive", nil, true, fastCall{globals{"/r", ""}, "hook", []string{"pre-receive"}}},
		{"--root=/r --url http://x hook merge-scan", nil, true, fastCall{globals{"/r", "http://x"}, "hook", []string{"merge-scan"}}},
		{"hook post-receive", map[string]string{"COLLAB_ROOT": "/e", "COLLAB_URL": "http://u"}, true, fastCall{globals{"/e", "http://u"}, "hook", []string{"post-receive"}}},
		{"--root /r hook proc-receive", map[string]string{"COLLAB_ROOT": "/e"}, true, fastCall{globals{"/r", ""}, "hook", []string{"proc-receive"}}},
		{"hook pre-receive", map[string]string{"COLLAB_ROOT": ""}, true, fastCall{globals{"", ""}, "hook", []string{"pre-receive"}}},
		{"serve --as alice", nil, true, fastCall{globals{forge.DefaultDir, ""}, "serve", []string{"alice"}}},
		{"--root /r keys-command git ssh-ed25519 AAAA", nil, true, fastCall{globals{"/r", ""}, "keys-command", []string{"ssh-ed25519", "AAAA"}}},
		// Everything else goes to the full parser.
		{"", nil, false, fastCall{}},
		{"--help", nil, false, fastCall{}},
		{"--root", nil, false, fastCall{}},
		{"-root /r hook pre-receive", nil, false, fastCall{}},
		{"--verbose hook pre-receive", nil, false, fastCall{}},
		{"hook", nil, false, fastCall{}},
		{"hook update", nil, false, fastCall{}},
		{"hook pre-receive extra", nil, false, fastCall{}},
		{"serve --as=alice", nil, false, fastCall{}},
		{"serve --as", nil, false, fastCall{}},
		{"serve --as --help", nil, false, fastCall{}},
		{"serve alice", nil, false, fastCall{}},
		{"keys-command git ssh-ed25519", nil, false, fastCall{}},
		{"keys-command git ssh-ed25519 AAAA more", nil, false, fastCall{}},
		{"user add alice", nil, false, fastCall{}},
	} {
		lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		got, ok := parseFast(append([]string{"collab-hook"}, strings.Fields(tc.args)...), lookup)
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseFast(%q, %v) = %+v, %v; want %+v, %v", tc.args, tc.env, got, ok, tc.want, tc.ok)
		}
	}
}
