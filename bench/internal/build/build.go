// Package build builds collab's programs for the benchmarks as make build
// does (static, without urfave/cli's doc generator), so that every bench
// measures what a deployment runs: collab-hook always with
// collab-hook-fast beside it, which the pre-receive shim and keys-command
// run where it is there.
package build

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

const module = "github.com/collab-forge/collab/cmd/"

// Hook builds collab-hook and collab-hook-fast into dir and returns
// collab-hook's path.
func Hook(dir string) (string, error) {
	return filepath.Join(dir, "collab-hook"), programs(dir, "collab-hook", "collab-hook-fast")
}

// Web builds collab-web into dir and returns its path.
func Web(dir string) (string, error) {
	return filepath.Join(dir, "collab-web"), programs(dir, "collab-web")
}

// All builds collab-hook, collab-hook-fast and collab-web into dir, and
// as make build does collab-hook-pg, collab-web and collab-hook-pg with the
// PostgreSQL store.
func All(dir string) error {
	if err := programs(dir, "collab-hook", "collab-hook-fast"); err != nil {
		return err
	}
	if err := pgPrograms(dir, "collab-web", "collab-web"); err != nil {
		return err
	}
	return pgPrograms(dir, "collab-hook-pg", "collab-hook")
}

// pgPrograms builds cmd with the PostgreSQL store into dir as name.
func pgPrograms(dir, name, cmd string) error {
	c := exec.Command("go", "build", "-tags", "urfave_cli_no_docs,postgres", "-o", filepath.Join(dir, name), module+cmd)
	c.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", name, err, out)
	}
	return nil
}

func programs(dir string, names ...string) error {
	args := []string{"build", "-tags", "urfave_cli_no_docs", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, module+n)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %v: %v\n%s", names, err, out)
	}
	return nil
}
