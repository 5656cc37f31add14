package collab_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sharedContract finds the interface contract the repository keeps a copy
// of: $COLLAB_CONTRACT, else ../shared/CONTRACT.md beside the checkout (or
// beside the main checkout, for a linked worktree); "" when there is none.
func sharedContract(t *testing.T) string {
	if p := os.Getenv("COLLAB_CONTRACT"); p != "" {
		return p
	}
	candidates := []string{filepath.Join("..", "shared", "CONTRACT.md")}
	if out, err := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-common-dir").Output(); err == nil {
		main := filepath.Dir(strings.TrimSpace(string(out)))
		candidates = append(candidates, filepath.Join(main, "..", "shared", "CONTRACT.md"))
	}
	for _, p := range candidates {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// TestContractCopy: docs/contract.md is the contract, word for word.
func TestContractCopy(t *testing.T) {
	src := sharedContract(t)
	if src == "" {
		t.Skip("no ../shared/CONTRACT.md here to compare docs/contract.md with")
	}
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("docs", "contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("docs/contract.md differs from %s: copy it again (cp %s docs/contract.md)", src, src)
	}
}
