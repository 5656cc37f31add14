// Package repos creates and lists the forge's bare repositories and keeps
// their git configuration and hook shims as collab needs them.
package repos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/collabref"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/hookdir"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/shellwords"
	"github.com/collab-forge/collab/internal/store"
)

// Hooks are the git hooks collab installs in every repository.
var Hooks = []string{"pre-receive", "proc-receive", "post-receive"}

// gitConfig is what every collab repository needs: refs/for goes to
// proc-receive, push options are advertised, refs/collab is hidden from
// receive-pack (a second wall behind pre-receive; upload-pack still serves
// it), and branch moves are logged (with the pusher as committer, which
// serve sets) so that a merge scan made up later credits the real pusher.
//
// core.sharedRepository=0640 makes git give every file it writes 0640 (0440
// for objects) and every directory 0750, whatever the umask of the process
// that runs it (git daemon, a hook, an admin's shell): repositories stay
// private to the forge's user and group. git init --shared sets
// receive.denyNonFastforwards; collab leaves force-pushes to branch rules,
// so it is set back to false.
//
// core.alternateRefsCommand: receive-pack's connectivity check after every
// push runs in quarantine, where the repository is its own alternate, and
// --alternate-refs has git start `git for-each-ref` on it to list its refs
// as known tips: every ref, refs/collab's one revision ref per pushed
// revision included (with 10,000 packed revisions a one-commit push took
// 107 ms instead of 32 ms here; bench/push measures it). The same
// repository's branches and tags are already known tips through --all, so
// `true` (which git starts without a shell, and which prints nothing)
// lists none: the check knows what it knew through --all, the hidden refs
// aside, and fewer known tips can only make it walk further, never check
// less. It is a third of the cost of for-each-ref, which
// core.alternateRefsPrefixes, set here before, still started.
var gitConfig = [][2]string{
	{"receive.procReceiveRefs", "refs/for"},
	{"receive.advertisePushOptions", "true"},
	{"core.logAllRefUpdates", "true"},
	{"receive.hideRefs", strings.TrimSuffix(collabref.Prefix, "/")},
	{"core.sharedRepository", "0640"},
	{"receive.denyNonFastforwards", "false"},
	{"core.alternateRefsCommand", "true"},
}

// Repo is a repository row.
type Repo struct {
	Name        string `json:"name"` // the key: org/foo.git
	Public      bool   `json:"public"`
	Description string `json:"description"`
	CreatedAt   string `json:"created_at"`
}

// Create makes a bare repository with collab's configuration and hooks, and
// records it. binary is the absolute path of collab-hook for the shims.
func Create(ctx context.Context, root forge.Root, db *store.DB, name string, public bool, description, binary string, now time.Time) (Repo, error) {
	key, err := reponame.Key(name)
	if err != nil {
		return Repo{}, err
	}
	dir := filepath.Join(root.ReposDir(), filepath.FromSlash(key))
	if _, err := os.Stat(dir); err == nil {
		return Repo{}, fault.New(fault.Conflict, "repository %s already exists", reponame.Display(key))
	}
	if err := os.MkdirAll(filepath.Dir(dir), forge.DirMode); err != nil {
		return Repo{}, fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	// The parent may be a symlink out of repos/; check before git writes there.
	realRepos, err := filepath.EvalSymlinks(root.ReposDir())
	if err != nil {
		return Repo{}, fmt.Errorf("resolve repos dir: %w", err)
	}
	realParent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil || (realParent != realRepos && !reponame.Inside(realRepos, realParent)) {
		return Repo{}, fault.New(fault.Usage, "bad repository name %q: outside the forge", name)
	}
	if err := git.Init(ctx, dir); err != nil {
		return Repo{}, err
	}
	if err := Configure(ctx, root, dir, binary); err != nil {
		return Repo{}, err
	}
	if err := SetExport(dir, public); err != nil {
		return Repo{}, err
	}
	if description != "" {
		if err := os.WriteFile(filepath.Join(dir, "description"), []byte(description+"\n"), forge.FileMode); err != nil {
			return Repo{}, fmt.Errorf("write description: %w", err)
		}
	}
	r := Repo{Name: key, Public: public, Description: description, CreatedAt: store.FormatTime(now)}
	err = db.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO repos(name, public, description, created_at) VALUES (?, ?, ?, ?)
			 ON CONFLICT(name) DO UPDATE SET public = excluded.public, description = excluded.description`,
			r.Name, r.Public, r.Description, r.CreatedAt)
		return err
	})
	if err != nil {
		return Repo{}, fmt.Errorf("record repository %s: %w", key, err)
	}
	return r, nil
}

// ConfigureAll configures (Configure) every repository that q lists, for
// binary: a root made anew (restore), or one whose record moved to where
// another binary serves it (migrate-to-postgres). A repository the record
// names and the root lacks is an error.
func ConfigureAll(ctx context.Context, root forge.Root, q store.Querier, binary string) (int, error) {
	all, err := List(ctx, q)
	if err != nil {
		return 0, err
	}
	for _, r := range all {
		dir, err := reponame.Dir(root.ReposDir(), r.Name)
		if err != nil {
			return 0, err
		}
		if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
			return 0, fmt.Errorf("the root lacks repository %s: %w", reponame.Display(r.Name), err)
		}
		if err := Configure(ctx, root, dir, binary); err != nil {
			return 0, fmt.Errorf("configure %s: %w", reponame.Display(r.Name), err)
		}
	}
	return len(all), nil
}

// Configure writes collab's git configuration and hook shims into dir,
// and the root's hooks directory (hookdir), and moves its objects to
// ObjectStore (Relocate). fsck calls it to repair a repository.
func Configure(ctx context.Context, root forge.Root, dir, binary string) error {
	if _, err := Relocate(dir); err != nil {
		return err
	}
	g := git.Open(dir)
	for _, kv := range gitConfig {
		if _, err := g.Run(ctx, nil, "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("configure %s: %w", dir, err)
		}
	}
	hooksDir := filepath.Join(dir, "hooks")
	if err := os.MkdirAll(hooksDir, forge.DirMode); err != nil {
		return fmt.Errorf("create hooks dir: %w", err)
	}
	for _, h := range Hooks {
		if err := writeFileAtomic(filepath.Join(hooksDir, h), []byte(Shim(binary, root.Dir, h)), ShimMode); err != nil {
			return fmt.Errorf("install %s hook: %w", h, err)
		}
	}
	// The root's hooks directory, which serve has git run in place of
	// these shims where they are exactly as written here.
	return hookdir.Install(root.Dir, HookSet(binary, root.Dir))
}

// HookSet is the root's hooks directory for binary (hookdir): every
// hook's shim, and git runs the hook script (relay.Script) for
// pre-receive and proc-receive, and through the post-receive gate for
// post-receive, which pre-receive shuts where post-receive would have
// nothing to do (a refs/for push, or a branch move that cannot merge a
// patch: hookenv.PostReceiveIdle): then no program starts for it at all.
func HookSet(binary, rootDir string) hookdir.Set {
	s := hookdir.Set{Shims: make(map[string]string, len(Hooks)),
		Links: map[string]string{"pre-receive": hookdir.Script, "proc-receive": hookdir.Script, "post-receive": hookdir.Gate}}
	for _, h := range Hooks {
		s.Shims[h] = Shim(binary, rootDir, h)
	}
	return s
}

// Config returns the git configuration every collab repository has, as
// key and value pairs (fsck compares).
func Config() [][2]string { return append([][2]string(nil), gitConfig...) }

// ShimMode is a hook shim's mode: git runs it as the forge's user.
const ShimMode = 0o750

// Shim is the text of hook h: exec BINARY --root ROOT hook H; for
// post-receive only when the push updates a branch. Under serve (or
// collab-web's git over HTTPS) git runs the root's hooks directory
// instead where a repository's hooks are exactly these (hookdir.Usable).
func Shim(binary, rootDir, hook string) string {
	r := strings.NewReplacer("{{BINARY}}", shellwords.Quote(binary), "{{ROOT}}", shellwords.Quote(rootDir), "{{HOOK}}", hook)
	if hook == "post-receive" {
		return r.Replace(collab.PostReceiveShim)
	}
	return r.Replace(collab.HookShim)
}

// SetExport makes dir readable by git daemon (and anonymous readers) or not.
func SetExport(dir string, public bool) error {
	p := filepath.Join(dir, "git-daemon-export-ok")
	if public {
		if err := os.WriteFile(p, nil, forge.FileMode); err != nil {
			return fmt.Errorf("mark public: %w", err)
		}
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("mark private: %w", err)
	}
	return nil
}

// List returns every repository, by name.
func List(ctx context.Context, q store.Querier) ([]Repo, error) {
	rows, err := q.QueryContext(ctx, "SELECT name, public, description, created_at FROM repos ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list repositories: %w", err)
	}
	defer rows.Close()
	var out []Repo
	for rows.Next() {
		var r Repo
		if err := rows.Scan(&r.Name, &r.Public, &r.Description, &r.CreatedAt); err != nil {
			return nil, fmt.Errorf("list repositories: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Get returns the repository with key, or NotFound.
func Get(ctx context.Context, q store.Querier, key string) (Repo, error) {
	r := Repo{Name: key}
	err := q.QueryRowContext(ctx, "SELECT public, description, created_at FROM repos WHERE name = ?", key).
		Scan(&r.Public, &r.Description, &r.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Repo{}, access.NotFound(key)
	}
	if err != nil {
		return Repo{}, fmt.Errorf("read repository %s: %w", key, err)
	}
	return r, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
