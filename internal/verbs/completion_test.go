package verbs

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The bash completion in shell-integration/ offers exactly the verbs,
// subcommands and flags the forge takes, so it cannot drift from them.
func TestCompletionMatchesVerbs(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script, err := filepath.Abs("../../shell-integration/collab.bash")
	if err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) []string {
		t.Helper()
		// COMP_WORDS as bash gives them for "collab WORDS… <TAB>".
		cmd := exec.Command("bash", "-c", `source "$0"; COMP_WORDS=(collab "$@" ""); COMP_CWORD=$(( $# + 1 )); _collab; printf '%s\n' "${COMPREPLY[@]}"`,
			script)
		cmd.Args = append(cmd.Args, words...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("complete %v: %v", words, err)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		return got
	}
	app := App(&Env{})
	var verbs []string
	for _, c := range app.Commands {
		verbs = append(verbs, c.Name)
		var subs []string
		for _, s := range c.Subcommands {
			subs = append(subs, s.Name)
			var flags []string
			for _, f := range s.Flags {
				flags = append(flags, "--"+f.Names()[0])
			}
			slices.Sort(flags)
			got := complete(c.Name, s.Name)
			// gerrit query also offers its terms; --format completes as --format=JSON.
			got = slices.DeleteFunc(got, func(w string) bool { return strings.HasSuffix(w, ":") || w == "status:open" })
			for i, w := range got {
				got[i], _, _ = strings.Cut(w, "=")
			}
			if !slices.Equal(got, flags) {
				t.Errorf("completion of %s %s: %v, want %v", c.Name, s.Name, got, flags)
			}
		}
		slices.Sort(subs)
		if len(subs) > 0 {
			if got := complete(c.Name); !slices.Equal(got, subs) {
				t.Errorf("completion of %s: %v, want %v", c.Name, got, subs)
			}
		}
	}
	slices.Sort(verbs)
	if got := complete(); !slices.Equal(got, verbs) {
		t.Errorf("completion of verbs: %v, want %v", got, verbs)
	}
}
