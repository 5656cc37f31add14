// Package forge knows the layout of a collab root: the repositories, the
// database (or the db setting naming a PostgreSQL one), the forge key and
// the settings kept in the database.
package forge

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/keyindex"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/pushlimit"
	"github.com/collab-forge/collab/internal/ratelimit"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/tokens"
	"github.com/collab-forge/collab/internal/webhook/addrs"
)

// DefaultDir is the root when neither --root nor COLLAB_ROOT says otherwise.
const DefaultDir = layout.DefaultRoot

// Settings a root knows; config set refuses others.
const (
	SettingURL = "url" // the web UI's base URL, for links printed to pushers
	SettingSSH = "ssh" // how users reach the forge, for printed hints
	// SettingGitURL is the anonymous git:// base pages show (git daemon's
	// host and port); without it they guess the web host on port 9418,
	// which clones another forge's repository where one listens there.
	SettingGitURL = "git_url"
	// SettingBusyTimeout bounds one request's wait for the writer lock.
	SettingBusyTimeout = store.SettingBusyTimeout
	// SettingRateBurst and SettingRateRefill are each principal's write
	// budget: a bucket of rate_burst writes, refilled at rate_refill a second.
	SettingRateBurst  = ratelimit.SettingBurst
	SettingRateRefill = ratelimit.SettingRefill
	// SettingAuthorizedKeys names the collab-hook of the authorized_keys
	// file every key change rewrites, or is off (keyindex).
	SettingAuthorizedKeys = keyindex.SettingAuthorizedKeys
	// SettingWebhookAllow are the address ranges a repository admin's
	// webhook may reach after all (addrs.Refused).
	SettingWebhookAllow = addrs.SettingAllow
)

// Settings lists the known setting keys: these and the push limits
// (pushlimit.Settings).
var Settings = append([]string{SettingURL, SettingSSH, SettingGitURL, SettingBusyTimeout, SettingRateBurst, SettingRateRefill, SettingAuthorizedKeys, SettingWebhookAllow,
	tokens.SettingTTLDefault, tokens.SettingTTLMax},
	pushlimit.Settings()...)

// Defaults are what a setting means while it is unset (config get prints
// them).
var Defaults = func() map[string]string {
	d := map[string]string{
		SettingBusyTimeout:    store.DefaultBusyTimeout.String(),
		SettingRateBurst:      strconv.FormatFloat(ratelimit.DefaultBurst, 'f', -1, 64),
		SettingRateRefill:     strconv.FormatFloat(ratelimit.DefaultRefill, 'f', -1, 64),
		SettingAuthorizedKeys: keyindex.Off,
	}
	for _, k := range pushlimit.Settings() {
		d[k] = pushlimit.Default(k)
	}
	return d
}()

// Root is a collab root directory.
type Root struct{ Dir string }

// New returns the root at dir, made absolute and with symlinks resolved so
// that hooks compare paths reliably.
func New(dir string) (Root, error) {
	abs, err := layout.Resolve(dir)
	if err != nil {
		return Root{}, err
	}
	return Root{Dir: abs}, nil
}

func (r Root) ReposDir() string { return layout.Repos(r.Dir) }

// DBPath is the SQLite file, and the base of the files kept beside the
// record whichever store holds it (the key index, authorized_keys).
func (r Root) DBPath() string { return layout.DB(r.Dir) }

// SettingDB is the db setting (CONTRACT.md "The root"): where the record
// lives when it is not collab.db, a PostgreSQL URL. It is kept in the
// file DBSettingPath, not in the record it names.
const SettingDB = "db"

// EnvDB overrides the db setting for one run, as COLLAB_ROOT does the root.
const EnvDB = "COLLAB_DB"

// DBSettingPath holds the db setting.
func (r Root) DBSettingPath() string { return filepath.Join(r.Dir, "db") }

// DBLocation is where the root's record lives: COLLAB_DB, else the db
// setting, else the SQLite file.
func (r Root) DBLocation() string {
	if v := os.Getenv(EnvDB); v != "" {
		return v
	}
	return r.storedDBLocation()
}

// storedDBLocation is where the root itself keeps its record, whatever
// COLLAB_DB says for this run: the db setting, else the SQLite file.
func (r Root) storedDBLocation() string {
	if b, err := os.ReadFile(r.DBSettingPath()); err == nil {
		if v := strings.TrimSpace(string(b)); v != "" {
			return v
		}
	}
	return r.DBPath()
}
func (r Root) KeyPath() string { return filepath.Join(r.Dir, "forge.key") }
func (r Root) LogDir() string  { return filepath.Join(r.Dir, "log") }

// SetDBLocation sets the root's db setting: from now on every process of
// the forge finds the record at url.
func (r Root) SetDBLocation(url string) error {
	return writePrivate(r.DBSettingPath(), url+"\n")
}

// Open opens the root's existing database.
func (r Root) Open(ctx context.Context) (*store.DB, error) {
	db, err := store.OpenExisting(ctx, r.DBLocation())
	if err != nil {
		return nil, fault.Default(err, "forge database unavailable")
	}
	db.SetBeside(r.DBPath())
	return db, nil
}

// OpenVia opens the root's record, which must be on PostgreSQL, through
// url: another way to the same database, for one long-running process
// (collab-web on the server itself, where the short processes go through
// a pgbouncer). The processes it starts still find the record through
// the db setting.
func (r Root) OpenVia(ctx context.Context, url string) (*store.DB, error) {
	if err := store.CheckURL(url); err != nil {
		return nil, err
	}
	if !store.IsURL(r.DBLocation()) {
		return nil, fault.New(fault.Usage, "--db: the root's record is not on PostgreSQL (init --db or migrate-to-postgres puts it there)")
	}
	db, err := store.OpenExisting(ctx, url)
	if err != nil {
		return nil, fault.Default(err, "forge database unavailable")
	}
	db.SetBeside(r.DBPath())
	return db, nil
}

// OpenNoMigrate opens the root's database without touching its schema.
func (r Root) OpenNoMigrate(ctx context.Context) (*store.DB, error) {
	db, err := store.OpenNoMigrate(ctx, r.DBLocation())
	if err != nil {
		return nil, fault.Default(err, "forge database unavailable")
	}
	db.SetBeside(r.DBPath())
	return db, nil
}

// OpenShort opens the root's database for a process that lives for one
// request (store.OpenShort).
func (r Root) OpenShort(ctx context.Context) (*store.DB, error) {
	db, err := store.OpenShort(ctx, r.DBLocation())
	if err != nil {
		return nil, err
	}
	db.SetBeside(r.DBPath())
	return db, nil
}

// Modes of what the forge creates: private to the forge's user, readable
// by its group (an AuthorizedKeysCommandUser in the group may read the
// database), whatever the umask.
const (
	DirMode  os.FileMode = 0o750 // the root, repos/, log/, every repository
	FileMode os.FileMode = 0o640 // the database, its -wal and -shm, logs
	KeyMode  os.FileMode = 0o600 // forge.key
)

// Umask is layout.Umask.
const Umask = layout.Umask

// Init creates the root, its database and forge key, and stores the given
// non-empty settings. Running it again changes nothing else. A db setting
// (a PostgreSQL URL) is checked, connected to and migrated before anything
// is made, and written last, so that a bad one leaves nothing behind.
func Init(ctx context.Context, r Root, settings map[string]string) error {
	loc, err := initLocation(r, settings[SettingDB])
	if err != nil {
		return err
	}
	var db *store.DB
	if store.IsURL(loc) {
		if db, err = store.Open(ctx, loc); err != nil {
			return err
		}
		defer db.Close()
	}
	for _, d := range []string{r.Dir, r.ReposDir(), r.LogDir()} {
		if err := mkdirPrivate(d); err != nil {
			return err
		}
	}
	if err := ensureKey(r.KeyPath()); err != nil {
		return err
	}
	if db == nil {
		if db, err = store.Open(ctx, loc); err != nil {
			return err
		}
		defer db.Close()
	} else if settings[SettingDB] != "" {
		if err := r.SetDBLocation(settings[SettingDB]); err != nil {
			return err
		}
	}
	for k, v := range settings {
		if v == "" || k == SettingDB {
			continue
		}
		if err := CheckSetting(k, v); err != nil {
			return err
		}
	}
	return db.Write(ctx, func(tx *sql.Tx) error {
		for k, v := range settings {
			if v == "" {
				continue
			}
			if err := store.SetSetting(ctx, tx, k, v); err != nil {
				return err
			}
		}
		// Pushers are always shown a link; until the operator says where
		// the web UI lives, it is collab-web's own default address.
		if u, err := store.Setting(ctx, tx, SettingURL); err != nil || u != "" {
			return err
		}
		return store.SetSetting(ctx, tx, SettingURL, DefaultURL)
	})
}

// initLocation is where init puts the record: the db setting given (init
// --db, or COLLAB_DB), which must be a PostgreSQL URL and may not move a
// root that already has a record elsewhere (migrate-to-postgres does
// that), else where it is.
func initLocation(r Root, db string) (string, error) {
	have := r.storedDBLocation()
	if db == "" {
		return have, nil
	}
	if err := store.CheckURL(db); err != nil {
		return "", err
	}
	if have != db && (store.IsURL(have) || exists(r.DBPath())) {
		return "", fault.New(fault.Usage, "the root's record is already at %s: init --db does not move it (collab-hook migrate-to-postgres does)", store.Redact(have))
	}
	return db, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writePrivate writes a file of the root's with FileMode (it may hold a
// password), whole or not at all.
func writePrivate(path, content string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), FileMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(tmp, FileMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// DefaultURL is collab-web's default listen address as a URL.
const DefaultURL = "http://127.0.0.1:8080"

// CheckSetting refuses a value that would print broken links or hints:
// url must be an absolute http(s) URL, ssh an ssh:// URL or user@host.
func CheckSetting(key, value string) error {
	switch key {
	case SettingURL:
		u, err := url.Parse(value)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fault.New(fault.Usage, "bad url %q: want an absolute http(s) URL such as https://forge.example", value)
		}
	case SettingSSH:
		if u, err := url.Parse(value); err == nil && u.Scheme == "ssh" && u.Host != "" {
			return nil
		}
		if strings.ContainsAny(value, " \t\n'\"$`;&|<>\\") || strings.HasPrefix(value, "-") || !strings.Contains(value, "@") {
			return fault.New(fault.Usage, "bad ssh %q: want ssh://git@host:port or git@host", value)
		}
	case SettingGitURL:
		u, err := url.Parse(value)
		if err != nil || u.Scheme != "git" || u.Hostname() == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(value, " \t\n'\"$`;&|<>\\") {
			return fault.New(fault.Usage, "bad git_url %q: want git://host[:port], as git daemon listens", value)
		}
	case SettingBusyTimeout:
		if _, err := store.ParseBusyTimeout(value); err != nil {
			return err
		}
	case SettingRateBurst:
		n, err := strconv.ParseFloat(value, 64)
		if err != nil || n < 1 || n > 1e9 || math.IsNaN(n) {
			return fault.New(fault.Usage, "bad %s %q: want a number of writes from 1 to 1e9", key, value)
		}
	case SettingAuthorizedKeys:
		return keyindex.CheckBinary(value)
	case SettingWebhookAllow:
		_, err := addrs.ParseAllow(value)
		return err
	case tokens.SettingTTLDefault, tokens.SettingTTLMax:
		if _, err := tokens.ParseTTL(key, value); err != nil {
			return err
		}
	case SettingRateRefill:
		n, err := strconv.ParseFloat(value, 64)
		if err != nil || !(n > 0) || n > 1e9 {
			return fault.New(fault.Usage, "bad %s %q: want writes a second, more than 0 and at most 1e9", key, value)
		}
	default:
		if pushlimit.Default(key) != "" {
			return pushlimit.Check(key, value)
		}
		return fault.New(fault.Usage, "unknown setting %q: want one of %s", key, strings.Join(Settings, ", "))
	}
	return nil
}

// mkdirPrivate makes dir (and missing parents) with DirMode; the umask can
// only make that tighter. A directory that was there already (a mount
// point, an admin's mkdir) loses what DirMode does not grant: the group's
// write bit and everything for others; nothing is ever loosened.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if extra := fi.Mode().Perm() &^ DirMode; extra != 0 {
		keep := fi.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSetuid | os.ModeSticky)
		if err := os.Chmod(dir, keep&^extra); err != nil {
			return fmt.Errorf("make %s private: %w", dir, err)
		}
	}
	return nil
}

func ensureKey(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fmt.Errorf("generate forge key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "collab forge key")
	if err != nil {
		return fmt.Errorf("encode forge key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, KeyMode)
	if errors.Is(err, os.ErrExist) {
		return nil // another init won the race
	}
	if err != nil {
		return fmt.Errorf("write forge key: %w", err)
	}
	if err := pem.Encode(f, block); err != nil {
		f.Close()
		return fmt.Errorf("write forge key: %w", err)
	}
	return f.Close()
}

// Key reads the forge's Ed25519 key (OpenSSH format, so ssh-keygen -Y and
// git's SSH signing can use the same file).
func (r Root) Key() (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(r.KeyPath())
	if err != nil {
		return nil, fmt.Errorf("read forge key: %w", err)
	}
	k, err := ssh.ParseRawPrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("parse forge key: %w", err)
	}
	pk, ok := k.(*ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("forge key is %T, want ed25519", k)
	}
	return *pk, nil
}

// ValidSetting reports whether key is a known setting.
func ValidSetting(key string) bool {
	for _, k := range Settings {
		if k == key {
			return true
		}
	}
	return false
}

// GitURL is the git:// URL of the repository displayed as name (org/foo)
// under the git_url setting's base, "" without one.
func GitURL(setting, name string) string {
	if setting == "" {
		return ""
	}
	return strings.TrimSuffix(setting, "/") + "/" + name + ".git"
}

// SSHUser is the login name in the root's ssh setting (ssh://git@host:2222
// or git@host), "git" without one: what Gerrit's git-review must be told
// (gitreview.username), since it logs in as the local user otherwise.
func SSHUser(setting string) string {
	if u, err := url.Parse(setting); err == nil && u.Scheme == "ssh" && u.User != nil && u.User.Username() != "" {
		return u.User.Username()
	}
	if user, _, ok := strings.Cut(setting, "@"); ok && user != "" && !strings.Contains(user, "/") {
		return user
	}
	return "git"
}

// SSHCommand turns the root's ssh setting (ssh://git@host:2222 or
// git@host) into the ssh command line a user types, for printed hints;
// without it, the host of the web URL base with user git stands in.
func SSHCommand(setting, base string) string {
	if setting != "" {
		if u, err := url.Parse(setting); err == nil && u.Scheme == "ssh" && u.Host != "" {
			dest := u.Hostname()
			if u.User != nil {
				dest = u.User.Username() + "@" + dest
			}
			if p := u.Port(); p != "" && p != "22" {
				return "ssh -p " + p + " " + dest
			}
			return "ssh " + dest
		}
		return "ssh " + strings.TrimSuffix(setting, ":")
	}
	if u, err := url.Parse(base); err == nil && u.Hostname() != "" {
		return "ssh git@" + u.Hostname()
	}
	return "ssh git@FORGE"
}

// CloneURL is what to give git clone for repository key over SSH, from
// the root's ssh setting (ssh://git@host:2222 or the scp-like git@host);
// "" where it is unset.
func CloneURL(sshSetting, key string) string {
	switch {
	case sshSetting == "":
		return ""
	case strings.HasPrefix(sshSetting, "ssh://"):
		return strings.TrimRight(sshSetting, "/") + "/" + key
	}
	return strings.TrimSuffix(sshSetting, ":") + ":" + key
}

// HTTPCloneURL is repository key's URL for git over HTTP(S) under
// collab-web's base URL; "" where that is unknown.
func HTTPCloneURL(base, key string) string {
	if base == "" {
		return ""
	}
	return strings.TrimSuffix(base, "/") + "/" + key
}

// MigrateToPostgres moves the root's SQLite record into the empty
// PostgreSQL database at url (migrate-to-postgres): in one SQLite write
// transaction it copies every row, checks that each table holds as many
// rows on both sides, sets the db setting and freezes the SQLite record
// (store.FreezeRecord: a writer that waited for the lock is refused, not
// lost), then keeps the SQLite file as collab.db.before-postgres. It
// returns the tables' row counts.
func MigrateToPostgres(ctx context.Context, r Root, url string) (map[string]int, error) {
	if err := store.CheckURL(url); err != nil {
		return nil, err
	}
	if have := r.DBLocation(); store.IsURL(have) {
		return nil, fault.New(fault.Usage, "the root's record is already on PostgreSQL (%s)", store.Redact(have))
	}
	from, err := r.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer from.Close()
	to, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer to.Close()
	var counts map[string]int
	err = from.Write(ctx, func(tx store.Tx) error {
		var err error
		if counts, err = store.CopyRecord(ctx, from, to); err != nil {
			if errors.Is(err, store.ErrNotEmpty) {
				return &fault.Error{Kind: fault.Usage, Err: err,
					Msg: "the PostgreSQL database is not empty: migrate-to-postgres moves a record into an empty database only"}
			}
			return err
		}
		// Set while the SQLite writer lock is held: a process that opens
		// the root from now on finds the record on PostgreSQL.
		if err := r.SetDBLocation(url); err != nil {
			return err
		}
		return store.FreezeRecord(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	if _, err := from.Checkpoint(ctx); err != nil {
		return counts, err
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		p := r.DBPath() + suffix
		if err := os.Rename(p, r.DBPath()+".before-postgres"+suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return counts, fmt.Errorf("keep the SQLite record: %w", err)
		}
	}
	return counts, nil
}
