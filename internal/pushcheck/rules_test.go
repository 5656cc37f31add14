package pushcheck

import (
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
)

func TestDecide(t *testing.T) {
	none, admin := Rule{Branch: "main"}, Rule{Branch: "main", AdminPush: true}
	for _, tc := range []struct {
		name      string
		rule      Rule
		move      Move
		repoAdmin bool
		allowed   bool
	}{
		{"writer ff", none, FastForward, false, false},
		{"admin ff, rule none", none, FastForward, true, false},
		{"admin ff, rule admin", admin, FastForward, true, true},
		{"writer ff, rule admin", admin, FastForward, false, false},
		{"admin rewind", admin, Rewind, true, false},
		{"admin delete", admin, Remove, true, false},
		{"writer delete", none, Remove, false, false},
		{"admin create", none, Create, true, true},
		{"writer create", admin, Create, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decide(tc.rule, tc.move, tc.repoAdmin)
			if (err == nil) != tc.allowed {
				t.Fatalf("allowed=%v (%v), want %v", err == nil, err, tc.allowed)
			}
			if err != nil {
				msg := fault.Public(err)
				if !strings.Contains(msg, "patch submit") || strings.Contains(msg, "\n") || fault.ExitCode(err) != 5 {
					t.Fatalf("refusal %q (exit %d): want one line naming patch submit, exit 5", msg, fault.ExitCode(err))
				}
			}
		})
	}
}

func TestRulesEncoding(t *testing.T) {
	for _, tc := range []struct {
		rules map[string]Rule
		enc   string
	}{
		{nil, "-"},
		{map[string]Rule{"main": {Branch: "main"}}, "main:none"},
		{map[string]Rule{"rel/1.x": {Branch: "rel/1.x", AdminPush: true}, "main": {Branch: "main"}}, "main:none rel/1.x:admin"},
	} {
		if got := EncodeRules(tc.rules); got != tc.enc {
			t.Errorf("EncodeRules(%v) = %q, want %q", tc.rules, got, tc.enc)
		}
		back, ok := DecodeRules(tc.enc)
		if !ok || len(back) != len(tc.rules) {
			t.Errorf("DecodeRules(%q) = %v, %v", tc.enc, back, ok)
		}
		for b, r := range tc.rules {
			if back[b] != r {
				t.Errorf("DecodeRules(%q)[%s] = %v, want %v", tc.enc, b, back[b], r)
			}
		}
	}
	// Anything else is no hand-off: the hook reads the database.
	for _, bad := range []string{"", " ", "main", "main:", ":none", "main:all", "ma..in:none", "main:none x"} {
		if r, ok := DecodeRules(bad); ok {
			t.Errorf("DecodeRules(%q) = %v, want not ok", bad, r)
		}
	}
}
