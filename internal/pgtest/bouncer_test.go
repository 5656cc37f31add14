//go:build postgres

package pgtest_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/buildtest"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/pgtest"
)

// TestBackupThroughBouncer: a forge whose db setting names the host's
// pgbouncer (transaction pooling), as docs/operations.md has it, is
// backed up as it is (pg_dump sets session parameters before its
// transaction, which pgbouncer does not keep from one transaction to the
// next), and the backup restores to a forge that holds its issue and that
// fsck finds sound.
func TestBackupThroughBouncer(t *testing.T) {
	ctx := context.Background()
	c := pgtest.ForTest(t)
	if _, err := c.CreateDB(ctx, "forge"); err != nil {
		t.Fatal(err)
	}
	spare, err := c.CreateDB(ctx, "spare")
	if err != nil {
		t.Fatal(err)
	}
	b, via, err := pgtest.StartBouncer(ctx, c.Sock(), "forge", 4)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	f := &pgForge{t: t, url: via, dir: t.TempDir()}
	buildtest.Build(t, "../../cmd/collab-hook", f.bin(), "urfave_cli_no_docs")
	buildtest.Build(t, "../../cmd/collab-hook", filepath.Join(f.dir, layout.PostgresBinary), "urfave_cli_no_docs,postgres")

	root := filepath.Join(t.TempDir(), "root")
	f.must(root, nil, "init", "--db", via)
	f.must(root, nil, "repo", "create", "demo")
	f.must(root, nil, "user", "add", "alice")
	f.must(root, nil, "grant", "alice", "demo", "write")
	out, code := f.as(root, "alice", "issue new demo --title 'kept through pgbouncer'")
	id := regexp.MustCompile(`[0-9a-f]{40}`).FindString(out)
	if code != 0 || id == "" {
		t.Fatalf("issue new: exit %d\n%s", code, out)
	}
	dir := filepath.Join(t.TempDir(), "backup")
	f.must(root, nil, "backup", dir)

	restored := filepath.Join(t.TempDir(), "restored")
	f.must(restored, nil, "restore", "--db", spare, dir)
	if out := f.must(restored, nil, "fsck"); !strings.Contains(out, "0 problems") {
		t.Errorf("fsck of the restored forge:\n%s", out)
	}
	if out, code := f.as(restored, "alice", "issue list demo"); code != 0 || !strings.Contains(out, id) {
		t.Errorf("issue list on the restored forge: exit %d\n%s", code, out)
	}
}
