package pushlimit

import (
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
)

func TestCheckValue(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{SettingForRefs, "1", true},
		{SettingForRefs, "0", false},
		{SettingRefs, "10000", true},
		{SettingRefs, "1e3", false},
		{SettingOptions, "0", true},
		{SettingOptionBytes, "-1", false},
		{SettingInputSize, "0", true},
		{SettingInputSize, "2147483648", true},
		{SettingMessageBytes, "x", false},
		{"push_max_colours", "1", false},
	} {
		if err := Check(tc.key, tc.value); (err == nil) != tc.ok || (err != nil && fault.KindOf(err) != fault.Usage) {
			t.Errorf("Check(%s, %q) = %v", tc.key, tc.value, err)
		}
	}
	if d := Default(SettingForRefs); d != "100" {
		t.Errorf("Default(%s) = %q", SettingForRefs, d)
	}
}

func TestOfAndHandOff(t *testing.T) {
	if l := Of(nil); l != Defaults() {
		t.Fatalf("Of of no settings = %+v", l)
	}
	l := Of(map[string]string{SettingForRefs: "3", SettingInputSize: "0", SettingOptions: "bad", "url": "http://x"})
	want := Defaults()
	want.ForRefs, want.InputSize = 3, 0 // a bad stored value keeps the default
	if l != want {
		t.Fatalf("Of = %+v; want %+v", l, want)
	}
	if got, ok := Decode(l.Encode()); !ok || got != l {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", l, got, ok)
	}
	for _, bad := range []string{"", "1 2 3", "1 1 1 1 1 1 x", "0 1 1 1 1 1 1", strings.Repeat("1 ", 8)} {
		if _, ok := Decode(bad); ok {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
}

func TestCheckPush(t *testing.T) {
	l := Limits{Refs: 5, ForRefs: 2, Options: 2, OptionBytes: 10, MessageBytes: 1}
	for _, tc := range []struct {
		p    Push
		want string
	}{
		{Push{Refs: 5, ForRefs: 2, Options: []string{"title=abc", "x"}}, ""},
		{Push{Refs: 3, ForRefs: 3}, "3 refs/for refs in one push, at most 2 (setting push_max_for_refs)"},
		{Push{Refs: 6}, "6 refs in one push, at most 5 (setting push_max_refs)"},
		{Push{Refs: 1, Options: []string{"a", "b", "c"}}, "3 push options, at most 2 (setting push_max_options)"},
		{Push{Refs: 1, Options: []string{"title=abcdef"}}, "push options of 12 bytes in all, at most 10 (setting push_max_option_bytes)"},
	} {
		err := l.Check(tc.p)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.p, err)
		case tc.want != "" && (err == nil || fault.KindOf(err) != fault.TooLarge || !strings.Contains(fault.Public(err), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.want)
		}
	}
	if err := Unlimited().Check(Push{Refs: 1 << 30, ForRefs: 1 << 30, Options: make([]string, 1000)}); err != nil {
		t.Errorf("Unlimited: %v", err)
	}
}
