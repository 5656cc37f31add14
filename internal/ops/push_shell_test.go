package ops

import (
	"os/exec"
	"strings"
	"testing"
)

// The ssh config snippet in shell-integration/ parses with the options the
// contract names.
func TestSSHConfigSnippet(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("no ssh client")
	}
	out, err := exec.Command("ssh", "-G", "-F", "../../shell-integration/ssh_config", "forge").CombinedOutput()
	if err != nil {
		t.Fatalf("ssh -G: %v: %s", err, out)
	}
	for _, want := range []string{"identitiesonly yes", "controlmaster auto", "controlpersist 600", "controlpath ", "user git"} {
		if !strings.Contains(string(out), "\n"+want) {
			t.Errorf("ssh -G lacks %q", want)
		}
	}
}
