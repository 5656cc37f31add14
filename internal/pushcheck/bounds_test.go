package pushcheck

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/pushlimit"
)

// A push's new commits are held to the message limit on every ref, read
// from the quarantine loose or packed; the repository's branches and tags
// to their limit, for pushes that create one.
func TestPushBounds(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bare := filepath.Join(dir, "r.git")
	run := func(env []string, stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), append([]string{"GIT_DIR=" + bare, "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x",
			"GIT_COMMITTER_NAME=A", "GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + dir}, env...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(nil, "", "init", "-q", "--bare", bare)
	tree := run(nil, "", "mktree")
	base := run(nil, "base\n", "commit-tree", tree)
	run(nil, "", "update-ref", "refs/heads/main", base)
	run(nil, "", "update-ref", "refs/tags/v1", base)

	// A quarantine as receive-pack makes one: the push's objects only.
	quarantine := func(t *testing.T, pack bool, msgs ...string) (git.Repo, string) {
		q := filepath.Join(bare, "objects", "incoming-"+strings.ReplaceAll(t.Name(), "/", "-"))
		os.MkdirAll(q, 0o755)
		env := []string{"GIT_OBJECT_DIRECTORY=" + q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(bare, "objects"), "GIT_QUARANTINE_PATH=" + q}
		tip := base
		for _, m := range msgs {
			tip = run(env, m, "commit-tree", tree, "-p", tip)
		}
		if strings.Contains(t.Name(), "annotated") {
			tip = run(env, "object "+tip+"\ntype commit\ntag v9\ntagger A <a@x> 1700000000 +0000\n\nA tag.\n", "mktag")
		}
		if pack {
			run(env, tip+"\n^"+base+"\n", "pack-objects", "--revs", "-q", filepath.Join(q, "pack", "pack"))
			run(env, "", "prune-packed")
		}
		return git.InHookEnv(bare, append(os.Environ(), env...)), tip
	}
	lim := pushlimit.Defaults()
	lim.MessageBytes, lim.RepoRefs = 1000, 4
	long := "Long\n\n" + strings.Repeat("x", 2000) + "\n"
	for _, tc := range []struct {
		name string
		pack bool
		msgs []string
		refs []string
		want string
	}{
		{"short, loose", false, []string{"one\n", "two\n"}, []string{"refs/heads/main"}, ""},
		{"long, loose", false, []string{"one\n", long, "three\n"}, []string{"refs/heads/main"}, "message of 2007 bytes is too long (at most 1000, setting push_max_message_bytes)"},
		{"long, packed", true, []string{long, "two\n"}, []string{"refs/heads/main"}, "message of 2007 bytes is too long"},
		{"long, on a tag", false, []string{long}, []string{"refs/tags/v2"}, "message of 2007 bytes is too long"},
		{"long, annotated tag", false, []string{long, "two\n"}, []string{"refs/tags/v3"}, "message of 2007 bytes is too long"},
		{"short, annotated tag", false, []string{"one\n"}, []string{"refs/tags/v4"}, ""},
		{"short, packed", true, []string{"one\n", "two\n"}, []string{"refs/heads/b1"}, ""},
		{"two new refs fit", false, []string{"one\n"}, []string{"refs/heads/b1", "refs/tags/t1"}, ""},
		{"three do not", false, []string{"one\n"}, []string{"refs/heads/b1", "refs/heads/b2", "refs/tags/t1"}, "push refused: r would hold 5 branches and tags, at most 4 (setting push_max_repo_refs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, tip := quarantine(t, tc.pack, tc.msgs...)
			var us []Update
			for _, r := range tc.refs {
				old := git.ZeroOID
				if r == "refs/heads/main" {
					old = base
				}
				us = append(us, Update{Old: old, New: tip, Ref: r})
			}
			err := Check(ctx, Push{Principal: "alice", Repo: "r.git", Updates: us, Limits: lim, Git: g,
				Rules: func(context.Context) (map[string]Rule, error) { return nil, nil }})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(fault.Public(err), tc.want)):
				t.Fatalf("%v, want %q", err, tc.want)
			}
		})
	}
}

// What the bounds add to pre-receive (go test -bench Bounds
// ./internal/pushcheck): reading a push's new commits for the message
// limit, loose (a small push) and packed (5,000 commits), and counting the
// repository's refs for a push that creates one.
func BenchmarkBounds(b *testing.B) {
	dir := b.TempDir()
	bare := filepath.Join(dir, "r.git")
	env := append(os.Environ(), "GIT_DIR="+bare, "GIT_AUTHOR_NAME=A", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=A",
		"GIT_COMMITTER_EMAIL=a@x", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	run := func(extra []string, stdin string, args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Env = append(env, extra...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run(nil, "", "init", "-q", "--bare", bare)
	for _, c := range []struct {
		name    string
		commits int
		pack    bool
	}{{"loose, 1 commit", 1, false}, {"loose, 30 commits", 30, false}, {"pack, 5000 commits", 5000, true}} {
		q := filepath.Join(bare, "objects", fmt.Sprintf("incoming-%d", c.commits))
		qenv := []string{"GIT_OBJECT_DIRECTORY=" + q, "GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(bare, "objects")}
		os.MkdirAll(q, 0o755)
		var fi strings.Builder
		fmt.Fprintf(&fi, "commit refs/heads/b%d\ncommitter A <a@x> 1700000000 +0000\ndata 2\nc\n\n", c.commits)
		for i := 1; i < c.commits; i++ {
			fmt.Fprintf(&fi, "commit refs/heads/b%d\ncommitter A <a@x> 1700000000 +0000\ndata 12\nCommit %05d\nM 100644 inline f\ndata 6\n%05d\n\n", c.commits, i, i)
		}
		run(qenv, fi.String(), "fast-import", "--quiet")
		if !c.pack { // as receive-pack leaves a push under transfer.unpackLimit
			// unpack-objects writes only objects its repository lacks.
			packs, _ := filepath.Glob(filepath.Join(q, "pack", "*.pack"))
			for _, p := range packs {
				os.Rename(p, p+".moved")
				os.Remove(strings.TrimSuffix(p, ".pack") + ".idx")
				f, _ := os.Open(p + ".moved")
				cmd := exec.Command("git", "unpack-objects", "-q")
				cmd.Env, cmd.Stdin = append(env, "GIT_OBJECT_DIRECTORY="+q), f
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("unpack-objects: %v\n%s", err, out)
				}
				f.Close()
			}
			os.RemoveAll(filepath.Join(q, "pack"))
			if dirs, _ := os.ReadDir(q); len(dirs) == 0 {
				b.Fatalf("the quarantine holds %d loose directories", len(dirs))
			}
		}
		g := git.InHookEnv(bare, append(append([]string{}, env...), append(qenv, "GIT_QUARANTINE_PATH="+q)...))
		tip, _, err := git.InHookEnv(bare, append(append([]string{}, env...), qenv...)).ResolveRef(context.Background(), fmt.Sprintf("refs/heads/b%d", c.commits))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if big, err := g.NewCommitsOver(context.Background(), 64<<10, []string{tip}); err != nil || len(big) != 0 {
					b.Fatal(big, err)
				}
			}
		})
	}
	b.Run("count refs", func(b *testing.B) {
		g := git.Open(bare)
		for i := 0; i < b.N; i++ {
			if _, err := g.CountRefs(context.Background(), "refs/heads/", "refs/tags/"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
