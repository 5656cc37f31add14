// Package backup makes an online, consistent copy of a whole forge (the
// database, every repository, forge.key) while pushes, verbs and git gc go
// on, and makes a new root from such a copy.
//
// Consistency: the database and the refs of every repository are taken
// together while every repository's refs lock and the writer lock are
// held, so the copy holds no ref without its row and no row without its
// ref (a patch pushed during the backup is either wholly in it or not at
// all). Objects are immutable, so they are
// copied afterwards without the lock; a git gc that packs or prunes while
// they are copied is caught by a connectivity check, and the objects are
// looked for again.
package backup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/dbfile"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/forge"
	"github.com/collab-forge/collab/internal/git"
	"github.com/collab-forge/collab/internal/patches"
	"github.com/collab-forge/collab/internal/principals"
	"github.com/collab-forge/collab/internal/reponame"
	"github.com/collab-forge/collab/internal/repos"
	"github.com/collab-forge/collab/internal/store"
)

// ManifestFile names what a backup holds; restore refuses a directory
// without one. It is written last: a backup without it is unfinished.
const ManifestFile = "collab-backup.json"

// Unfinished work is marked by a file written first and removed last:
// a killed backup or restore is recognised by its retry, which clears
// what it left and starts over in the same directory.
const (
	BackupUnfinished  = "collab-backup.unfinished"
	RestoreUnfinished = "collab-restore.unfinished"
)

// Format is the layout version of a backup directory: the record as
// SQLite's RecordFile. FormatPostgres holds it as pg_dump's DumpFile
// instead (Store says so); a collab that predates it refuses it by its
// number.
const (
	Format         = 1
	FormatPostgres = 2
)

// The record in a backup directory.
const (
	RecordFile = "collab.db"
	DumpFile   = "collab.pgdump"
)

// StorePostgres is Manifest.Store of a record from PostgreSQL.
const StorePostgres = "postgres"

// Manifest describes one backup.
type Manifest struct {
	Format int `json:"format"`
	// Store is where the record was: "" for SQLite, StorePostgres.
	Store         string   `json:"store,omitempty"`
	CreatedAt     string   `json:"created_at"`
	SourceRoot    string   `json:"source_root"`
	SchemaVersion int      `json:"schema_version"`
	Repos         []string `json:"repos"`
	// LockedMS is how long the writer lock was held for the snapshot.
	LockedMS int64 `json:"locked_ms"`
}

// Backup copies the forge at root (database db) into dir, which must not
// exist or be empty. afterSnapshot, when not nil, runs once the snapshot
// is taken and the lock released, before the objects are copied.
func Backup(ctx context.Context, root forge.Root, db *store.DB, dir string, now time.Time, out io.Writer, afterSnapshot func() error) (Manifest, error) {
	if err := startIn(dir, BackupUnfinished, "backup", out); err != nil {
		return Manifest{}, err
	}
	m := Manifest{Format: Format, CreatedAt: store.FormatTime(now), SourceRoot: root.Dir}
	if db.Postgres() {
		m.Format, m.Store = FormatPostgres, StorePostgres
	}
	var snaps map[string]map[string]string // repository key → ref → oid
	var dump func() error
	var start time.Time
	for attempt := 0; ; attempt++ {
		var err error
		start = time.Now()
		snaps, dump, err = snapshot(ctx, root, db, dir, &m)
		if err == nil {
			break
		}
		if !errors.Is(err, errNewRepo) || attempt >= 3 {
			return m, fault.Default(err, "backup failed")
		}
		// A repository was created meanwhile: its refs were not locked.
		if err := os.Remove(filepath.Join(dir, RecordFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return m, err
		}
	}
	m.LockedMS = time.Since(start).Milliseconds()
	if dump != nil {
		fmt.Fprintf(out, "backup: record snapshot and refs of %d repositories taken together (refs locks held %d ms)\n", len(m.Repos), m.LockedMS)
		if err := dump(); err != nil {
			return m, err
		}
		fmt.Fprintf(out, "backup: pg_dump wrote the snapshot to %s\n", DumpFile)
	} else {
		fmt.Fprintf(out, "backup: database and refs of %d repositories taken together (writer lock held %d ms)\n", len(m.Repos), m.LockedMS)
	}
	if afterSnapshot != nil {
		if err := afterSnapshot(); err != nil {
			return m, fmt.Errorf("after the snapshot: %w", err)
		}
	}
	if err := copyFile(root.KeyPath(), filepath.Join(dir, "forge.key"), forge.KeyMode); err != nil {
		return m, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "repos"), forge.DirMode); err != nil {
		return m, fmt.Errorf("create %s: %w", dir, err)
	}
	var st stats
	for _, key := range m.Repos {
		if err := backupRepo(ctx, root, dir, key, snaps[key], &st); err != nil {
			return m, fmt.Errorf("back up %s: %w", reponame.Display(key), err)
		}
	}
	// One sync for every file copied, before the manifest says the
	// backup is whole.
	syscall.Sync()
	if err := writeManifest(dir, m); err != nil {
		return m, err
	}
	if err := finish(dir, BackupUnfinished); err != nil {
		return m, err
	}
	fmt.Fprintf(out, "backup: copied %d files (%d bytes) of %d repositories; %s holds the forge\n", st.files, st.bytes, len(m.Repos), dir)
	return m, nil
}

// errNewRepo is a repository that appeared between the listing of the
// repositories and the lock.
var errNewRepo = errors.New("a repository was created during the snapshot")

// snapshot takes the record and every repository's refs, all at one
// moment: it holds every repository's refs lock (which a push holds from
// before its transaction until its refs are written), so that no push is
// between its commit and its ref update, and then takes the record:
//
//   - SQLite: under the writer lock (taken after the refs locks, in the
//     order pushes take them), the database is copied into dir.
//   - PostgreSQL: a snapshot is exported, which the returned dump writes
//     into dir once the locks are let go (pg_dump --snapshot); writers go
//     on meanwhile, as they do with any reader.
func snapshot(ctx context.Context, root forge.Root, db *store.DB, dir string, m *Manifest) (snaps map[string]map[string]string, dump func() error, err error) {
	listed, err := repos.List(ctx, db.R())
	if err != nil {
		return nil, nil, err
	}
	locked := map[string]bool{}
	var unlocks []func()
	defer func() {
		for _, u := range unlocks {
			u()
		}
	}()
	if !db.ReadOnly() {
		for _, r := range listed { // sorted by name: one order for every locker
			src, err := reponame.Dir(root.ReposDir(), r.Name)
			if err != nil {
				return nil, nil, err
			}
			u, err := patches.LockRefs(ctx, src)
			if err != nil {
				return nil, nil, fmt.Errorf("lock the refs of %s: %w", reponame.Display(r.Name), err)
			}
			unlocks = append(unlocks, u)
			locked[r.Name] = true
		}
	}
	// take reads the repositories that q lists and their refs.
	take := func(q store.Querier) error {
		all, err := repos.List(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range all {
			if !locked[r.Name] && !db.ReadOnly() {
				return errNewRepo
			}
		}
		snaps = map[string]map[string]string{}
		m.Repos = nil
		for _, r := range all {
			src, err := reponame.Dir(root.ReposDir(), r.Name)
			if err != nil {
				return err
			}
			refs, err := git.Open(src).Refs(ctx)
			if err != nil {
				return fmt.Errorf("refs of %s: %w", reponame.Display(r.Name), err)
			}
			snaps[r.Name] = refs
			m.Repos = append(m.Repos, r.Name)
		}
		v, err := db.Version(ctx)
		m.SchemaVersion = v
		return err
	}
	if db.Postgres() {
		s, err := db.ExportSnapshot(ctx)
		if err != nil {
			return nil, nil, err
		}
		if err := take(s.Q()); err != nil {
			s.Close()
			return nil, nil, err
		}
		loc := root.DBLocation()
		return snaps, func() error {
			defer s.Close()
			return store.Dump(ctx, loc, s.ID, filepath.Join(dir, DumpFile))
		}, nil
	}
	err = db.Exclusive(ctx, func() error {
		if err := db.CopyTo(ctx, filepath.Join(dir, RecordFile)); err != nil {
			return err
		}
		return take(db.R())
	})
	return snaps, nil, err
}

// backupRepo copies one repository: everything but its refs, which are
// written from the snapshot, and the caches that could name objects the
// copy lacks (commit-graph, multi-pack-index, bitmaps). The copy has the
// stock layout, its objects in objects/ (repos.ObjectStore is how collab
// serves a repository, which restore makes again).
func backupRepo(ctx context.Context, root forge.Root, dir, key string, refs map[string]string, st *stats) error {
	src, err := reponame.Dir(root.ReposDir(), key)
	if err != nil {
		return err
	}
	objects, err := filepath.EvalSymlinks(filepath.Join(src, "objects"))
	if err != nil {
		return fmt.Errorf("find the objects of %s: %w", reponame.Display(key), err)
	}
	dst := filepath.Join(dir, "repos", filepath.FromSlash(key))
	if err := copyTree(src, dst, skipInBackup, st); err != nil {
		return err
	}
	if err := writeRefs(dst, refs); err != nil {
		return err
	}
	return copyObjects(ctx, objects, dst, st)
}

// copyObjects copies the objects directory objects into dst's, until
// every object a ref of dst reaches is there: git gc may have packed
// objects and pruned their loose copies between the walk and the copy.
// Each round looks at the objects as they are now and copies what dst
// lacks.
func copyObjects(ctx context.Context, objects, dst string, st *stats) error {
	g := git.Open(dst)
	var last error
	for round := 0; round < 5; round++ {
		if err := copyTree(objects, filepath.Join(dst, "objects"), skipObjectCaches, st); err != nil {
			return err
		}
		if last = g.CheckConnectivity(ctx); last == nil {
			return nil
		}
	}
	return fmt.Errorf("objects still missing after copying again: %w", last)
}

// writeRefs writes the snapshot's refs as the repository's packed-refs
// (with the loose-ref directories git expects).
func writeRefs(dst string, refs map[string]string) error {
	for _, d := range []string{"refs", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dst, d), forge.DirMode); err != nil {
			return fmt.Errorf("write refs: %w", err)
		}
	}
	names := make([]string, 0, len(refs))
	for r := range refs {
		names = append(names, r)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# pack-refs with: sorted \n")
	for _, r := range names {
		fmt.Fprintf(&b, "%s %s\n", refs[r], r)
	}
	if err := os.WriteFile(filepath.Join(dst, "packed-refs"), []byte(b.String()), forge.FileMode); err != nil {
		return fmt.Errorf("write refs: %w", err)
	}
	return nil
}

// skipInBackup leaves out of a repository's copy: its refs and reflogs
// (the snapshot's refs replace them), lock files and gc's bookkeeping,
// and its objects, which copyObjects copies.
func skipInBackup(rel string, d fs.DirEntry) bool {
	switch rel {
	case "refs", "logs", "packed-refs", "FETCH_HEAD", "gc.pid", "gc.log", "objects", repos.ObjectStore:
		return true
	}
	return strings.HasSuffix(rel, ".lock")
}

// skipObjectCaches leaves out of the objects' copy pushes still in
// quarantine and half-written packs, and the caches that can name
// objects newer than the snapshot.
func skipObjectCaches(rel string, d fs.DirEntry) bool {
	base := filepath.Base(rel)
	switch {
	case strings.HasPrefix(base, "tmp_"), strings.HasPrefix(base, "incoming-"),
		strings.HasPrefix(base, "commit-graph"), strings.HasPrefix(base, "multi-pack-index"),
		strings.HasSuffix(base, ".bitmap"), strings.HasSuffix(base, ".lock"):
		return true
	}
	return false
}

// Restore makes the forge at root from the backup in dir: root must not
// exist or be empty. The hook shims and git configuration are written for
// this root and binary, and the database is brought up to this binary's
// schema. A record from PostgreSQL goes into the empty database at db (a
// URL), which becomes the root's db setting; one from SQLite into the
// root, and db must be "".
func Restore(ctx context.Context, dir string, root forge.Root, db, binary string, out io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, BackupUnfinished)); err == nil {
		return fault.New(fault.Usage, "%s holds an unfinished backup (%s): make the backup again", dir, BackupUnfinished)
	}
	m, err := readManifest(dir)
	if err != nil {
		return err
	}
	pg := m.Store == StorePostgres
	loaded := false // the database holds the dump already
	// Whatever is refused is refused before anything is written.
	switch {
	case pg && db == "":
		return fault.New(fault.Usage, "%s holds a record from PostgreSQL: give --db postgres://USER@HOST/DBNAME, an empty database to restore it into", dir)
	case !pg && db != "":
		return fault.New(fault.Usage, "%s holds an SQLite record: restore it without --db, then move it with migrate-to-postgres", dir)
	case pg:
		if known := dbfile.Known(collab.PostgresSchema); m.SchemaVersion > known {
			return fault.Default(dbfile.Newer(m.SchemaVersion, known), "the backup's record cannot be read")
		}
		n, err := tablesIn(ctx, db)
		if err != nil {
			return err
		}
		// A restore killed after its load (one transaction: all or
		// nothing) finds the database full and claimed by this root.
		loaded = n > 0 && resuming(root, db)
		if n > 0 && !loaded {
			return fault.New(fault.Usage, "the PostgreSQL database is not empty (%d tables): restore a record into an empty database only", n)
		}
	default:
		// A backup made by a newer collab is refused; its header says,
		// and the backup is only read (opening it with SQLite would
		// write beside it).
		if err := dbfile.Check(filepath.Join(dir, RecordFile)); err != nil {
			return fault.Default(err, "the backup's database cannot be read")
		}
	}
	// The db setting of a resumed restore stays: it says whose the
	// database's record is until it is written again.
	var keep []string
	if pg {
		keep = append(keep, filepath.Base(root.DBSettingPath()))
	}
	if err := startIn(root.Dir, RestoreUnfinished, "restore", out, keep...); err != nil {
		return err
	}
	// A root made by hand beforehand gets the mode a fresh root has.
	if err := os.Chmod(root.Dir, forge.DirMode); err != nil {
		return fmt.Errorf("make %s private: %w", root.Dir, err)
	}
	if pg {
		// The root claims the database before it is filled, so that a
		// retry knows whose record is there.
		if err := root.SetDBLocation(db); err != nil {
			return err
		}
		if !loaded {
			if err := store.LoadDump(ctx, db, filepath.Join(dir, DumpFile)); err != nil {
				return err
			}
		}
	} else if err := copyFile(filepath.Join(dir, RecordFile), filepath.Join(root.Dir, RecordFile), store.FileMode); err != nil {
		return err
	}
	var st stats
	if err := copyTree(filepath.Join(dir, "repos"), root.ReposDir(), func(string, fs.DirEntry) bool { return false }, &st); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(dir, "forge.key"), root.KeyPath(), forge.KeyMode); err != nil {
		return err
	}
	if err := os.MkdirAll(root.LogDir(), forge.DirMode); err != nil {
		return fmt.Errorf("create %s: %w", root.LogDir(), err)
	}
	rec, err := root.Open(ctx)
	if err != nil {
		return err
	}
	defer rec.Close()
	n, err := repos.ConfigureAll(ctx, root, rec.R(), binary)
	if err != nil {
		return err
	}
	// keys-command reads the key index beside the database, not the
	// database; a restored root needs its own, and its authorized_keys file
	// (where turned on) names this binary, as the hook shims do.
	if err := principals.RestoreKeyFiles(ctx, rec, binary); err != nil {
		return fmt.Errorf("write the key index: %w", err)
	}
	syscall.Sync()
	if err := finish(root.Dir, RestoreUnfinished); err != nil {
		return err
	}
	fmt.Fprintf(out, "restore: %s made from the backup of %s taken %s (%d repositories, %d files); hook shims point at %s\n",
		root.Dir, m.SourceRoot, m.CreatedAt, n, st.files, binary)
	return nil
}

// tablesIn counts the tables in the database at db, refusing a URL that
// does not parse or answer.
func tablesIn(ctx context.Context, db string) (int, error) {
	if err := store.CheckURL(db); err != nil {
		return 0, err
	}
	to, err := store.OpenNoMigrate(ctx, db)
	if err != nil {
		return 0, fault.Default(err, "the database cannot be reached")
	}
	defer to.Close()
	return to.Tables(ctx)
}

// resuming reports whether root holds an unfinished restore that had
// claimed the database at db.
func resuming(root forge.Root, db string) bool {
	if _, err := os.Stat(filepath.Join(root.Dir, RestoreUnfinished)); err != nil {
		return false
	}
	b, err := os.ReadFile(root.DBSettingPath())
	return err == nil && strings.TrimSpace(string(b)) == db
}

// startIn makes dir (DirMode) or accepts an empty one, or one holding
// the marker unfinished (a killed run's work, which it clears), and
// writes the marker: a backup or a restore never writes over anything
// else that is there.
func startIn(dir, unfinished, what string, out io.Writer, keep ...string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, forge.DirMode); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	case err != nil:
		return fmt.Errorf("read %s: %w", dir, err)
	case len(entries) > 0:
		if _, err := os.Stat(filepath.Join(dir, unfinished)); err != nil {
			return fault.New(fault.Usage, "%s is not empty: give a new or empty directory", dir)
		}
		fmt.Fprintf(out, "%s: clearing what an unfinished run left in %s\n", what, dir)
		for _, e := range entries {
			if e.Name() == unfinished || slices.Contains(keep, e.Name()) {
				continue // the marker goes last, so a kill meanwhile is still recognised
			}
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("clear %s: %w", dir, err)
			}
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, unfinished), os.O_WRONLY|os.O_CREATE, forge.FileMode)
	if err != nil {
		return fmt.Errorf("mark %s unfinished: %w", dir, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("mark %s unfinished: %w", dir, err)
	}
	return f.Close()
}

// finish removes the marker of unfinished work from dir, once all else
// there is on disk.
func finish(dir, unfinished string) error {
	syscall.Sync()
	if err := os.Remove(filepath.Join(dir, unfinished)); err != nil {
		return fmt.Errorf("mark %s finished: %w", dir, err)
	}
	syscall.Sync()
	return nil
}

func writeManifest(dir string, m Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(b, '\n'), forge.FileMode); err != nil {
		return fmt.Errorf("write the manifest: %w", err)
	}
	return nil
}

func readManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, fault.New(fault.Usage, "%s holds no collab backup (no %s)", dir, ManifestFile)
	}
	if err != nil {
		return m, fmt.Errorf("read the manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fault.New(fault.Usage, "%s: bad %s: %v", dir, ManifestFile, err)
	}
	if (m.Format != Format || m.Store != "") && (m.Format != FormatPostgres || m.Store != StorePostgres) {
		return m, fault.New(fault.Usage, "%s: backup format %d, this collab reads %d and %d", dir, m.Format, Format, FormatPostgres)
	}
	return m, nil
}
