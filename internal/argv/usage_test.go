package argv

import (
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/collab-forge/collab/internal/fault"
)

func TestSuggest(t *testing.T) {
	cmds := []string{"whoami", "repo", "issue", "lease", "patch", "hooks", "token"}
	for _, tc := range []struct{ in, want string }{
		{"isue", "issue"},
		{"issues", "issue"},
		{"pacth", "patch"},
		{"leas", "lease"},
		{"tok", "token"},
		{"who", "whoami"},
		{"xyz", ""},
		{"gerrit", ""},
		{"rep", "repo"},
	} {
		if got := Suggest(tc.in, cmds); got != tc.want {
			t.Errorf("Suggest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Suggest("--titel", []string{"--title", "--body", "--json"}); got != "--title" {
		t.Errorf("Suggest(--titel) = %q", got)
	}
	if err := UnknownCommand(&cli.App{Commands: []*cli.Command{{Name: "issue"}}}, "isue"); fault.ExitCode(err) != 2 ||
		err.Error() != `unknown command "isue" (did you mean "issue"?); run 'help' for the list` {
		t.Errorf("UnknownCommand: %v", err)
	}
}

func TestSplits(t *testing.T) {
	for _, tc := range []struct {
		in       string
		want     string // Flag=Value+After… per split, ";"-joined
		rejoined string
	}{
		{"issue new demo --title Parser crashes", "--title=Parser+crashes", "issue new demo --title 'Parser crashes'"},
		{"issue new demo --title Parser crashes on input --body B", "--title=Parser+crashes+on+input", "issue new demo --title 'Parser crashes on input' --body B"},
		{"issue new --title=Two words demo", "--title=Two+words+demo", "issue new --title 'Two words demo'"},
		{"issue new demo --title T", "", "issue new demo --title T"},
		{"issue new demo --json extra", "", ""},
		{"issue new demo --title T -- more", "", ""},
		{"repo create demo --description two words --public", "--description=two+words", "repo create demo --description 'two words' --public"},
	} {
		ss := Splits(testApp(), strings.Fields(tc.in))
		var got []string
		for _, s := range ss {
			got = append(got, s.Flag+"="+strings.Join(append([]string{s.Value}, s.After...), "+"))
		}
		if strings.Join(got, ";") != tc.want {
			t.Errorf("Splits(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if len(ss) > 0 {
			if r := Quote(Rejoin(strings.Fields(tc.in), ss[0])); r != tc.rejoined {
				t.Errorf("Rejoin(%q) = %s, want %s", tc.in, r, tc.rejoined)
			}
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote([]string{"issue", "new", "org/demo", "--title", "it's two", "--body", ""}); got != `issue new org/demo --title 'it'\''s two' --body ''` {
		t.Errorf("Quote = %s", got)
	}
}

func TestMissingValue(t *testing.T) {
	for in, want := range map[string]string{
		"issue new demo --title":    "flag --title needs a value",
		"issue new demo --title T":  "",
		"issue new demo --json":     "",
		"issue new demo -- --title": "",
		"repo create demo -d":       "flag -d needs a value",
		"repo create demo --public": "",
	} {
		err := MissingValue(testApp(), strings.Fields(in))
		if want == "" && err != nil || want != "" && (err == nil || err.Error() != want || fault.ExitCode(err) != 2) {
			t.Errorf("MissingValue(%q) = %v, want %q", in, err, want)
		}
	}
}
