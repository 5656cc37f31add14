package principals

import (
	"context"
	"crypto/rsa"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"golang.org/x/crypto/ssh"

	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/keyindex"
	"github.com/collab-forge/collab/internal/store"
	"github.com/collab-forge/collab/internal/text"
)

// Key is a keys row.
type Key struct {
	Fingerprint string `json:"fingerprint"` // SHA256:…
	Principal   string `json:"principal"`
	Type        string `json:"type"`
	Blob        string `json:"blob"` // base64 of the wire key
	Comment     string `json:"comment"`
	CreatedAt   string `json:"created_at"`
}

// Line is the key as it appears in authorized_keys: TYPE BLOB [COMMENT].
func (k Key) Line() string {
	if k.Comment == "" {
		return k.Type + " " + k.Blob
	}
	return k.Type + " " + k.Blob + " " + k.Comment
}

// MaxKeyLine bounds the text given to key add (a 16 kbit RSA key is ~2.8 KB).
const MaxKeyLine = 16 << 10

// ParseKey validates one public key line "TYPE BASE64 [COMMENT]" as
// ssh-keygen writes it. Options, certificates, several keys, control
// characters and short RSA keys are refused: the line is written into
// authorized_keys, where any of them could change what sshd allows.
func ParseKey(line string) (Key, error) {
	bad := func(why string) error { return fault.New(fault.Usage, "bad public key: %s", why) }
	if len(line) > MaxKeyLine {
		return Key{}, bad("too long")
	}
	for _, r := range line {
		if r == '\n' || r == '\r' {
			return Key{}, bad("holds a newline (give exactly one key)")
		}
		if unicode.IsControl(r) && r != '\t' {
			return Key{}, bad("holds a control character")
		}
	}
	line = strings.TrimSpace(line)
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return Key{}, bad(`want "TYPE BASE64 [COMMENT]", e.g. "ssh-ed25519 AAAA… you@host"`)
	}
	raw, err := base64.StdEncoding.DecodeString(fields[1])
	if err != nil {
		return Key{}, bad("the key is not base64 (options before the key type are not accepted)")
	}
	pub, err := ssh.ParsePublicKey(raw)
	if err != nil {
		return Key{}, bad(err.Error())
	}
	if pub.Type() != fields[0] {
		return Key{}, bad(fmt.Sprintf("type %q does not match the key's %q", text.Clip(fields[0]), pub.Type()))
	}
	if _, ok := pub.(*ssh.Certificate); ok {
		return Key{}, bad("certificates are not accepted; add the plain key")
	}
	if ck, ok := pub.(ssh.CryptoPublicKey); ok {
		if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && rk.N.BitLen() < 2048 {
			return Key{}, bad(fmt.Sprintf("RSA key of %d bits; at least 2048 needed", rk.N.BitLen()))
		}
	}
	comment := strings.Join(fields[2:], " ")
	if len(comment) > 256 {
		comment = comment[:256]
	}
	return Key{
		Fingerprint: ssh.FingerprintSHA256(pub),
		Type:        pub.Type(),
		Blob:        base64.StdEncoding.EncodeToString(pub.Marshal()),
		Comment:     strings.ToValidUTF8(comment, "?"),
	}, nil
}

// AddKey gives principal the key in line. A key belongs to one principal:
// adding it for another is a conflict; adding it again for the same one
// changes nothing and reports existed.
func AddKey(ctx context.Context, db *store.DB, principal, line string, now time.Time) (k Key, existed bool, err error) {
	k, err = ParseKey(line)
	if err != nil {
		return Key{}, false, err
	}
	k.Principal = principal
	k.CreatedAt = store.FormatTime(now)
	err = writeKeys(ctx, db, func(tx *sql.Tx) (bool, error) {
		if _, err := Get(ctx, tx, principal); err != nil {
			return false, err
		}
		var owner string
		err := tx.QueryRowContext(ctx, `SELECT principal FROM keys WHERE fingerprint = ?`, k.Fingerprint).Scan(&owner)
		switch {
		case err == nil && owner == principal:
			existed = true
			return false, nil
		case err == nil:
			return false, fault.New(fault.Conflict, "key %s already belongs to %s", k.Fingerprint, owner)
		case !errors.Is(err, sql.ErrNoRows):
			return false, fmt.Errorf("read key %s: %w", k.Fingerprint, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO keys(fingerprint, principal, type, blob, comment, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			k.Fingerprint, k.Principal, k.Type, k.Blob, k.Comment, k.CreatedAt)
		if err != nil {
			return false, fmt.Errorf("add key %s: %w", k.Fingerprint, err)
		}
		return true, nil
	})
	return k, existed, err
}

// RemoveKey deletes the key with fingerprint.
func RemoveKey(ctx context.Context, db *store.DB, fingerprint string) (Key, error) {
	var k Key
	err := writeKeys(ctx, db, func(tx *sql.Tx) (bool, error) {
		ks, err := queryKeys(ctx, tx, `WHERE k.fingerprint = ?`, fingerprint)
		if err != nil {
			return false, err
		}
		if len(ks) == 0 {
			return false, fault.New(fault.NotFound, "key %s not found", text.Clip(fingerprint))
		}
		k = ks[0]
		if _, err := tx.ExecContext(ctx, `DELETE FROM keys WHERE fingerprint = ?`, fingerprint); err != nil {
			return false, fmt.Errorf("remove key %s: %w", fingerprint, err)
		}
		return true, nil
	})
	return k, err
}

// Keys returns the keys of principal ("" for every principal's).
func Keys(ctx context.Context, q store.Querier, principal string) ([]Key, error) {
	if principal == "" {
		return queryKeys(ctx, q, ``)
	}
	if _, err := Get(ctx, q, principal); err != nil {
		return nil, err
	}
	return queryKeys(ctx, q, `WHERE k.principal = ?`, principal)
}

func queryKeys(ctx context.Context, q store.Querier, where string, args ...any) ([]Key, error) {
	rows, err := q.QueryContext(ctx, `SELECT k.fingerprint, k.principal, k.type, k.blob, k.comment, k.created_at
		FROM keys k `+where+` ORDER BY k.principal, k.created_at, k.fingerprint`, args...)
	if err != nil {
		return nil, fmt.Errorf("read keys: %w", err)
	}
	defer rows.Close()
	out := []Key{}
	for rows.Next() {
		var k Key
		if err := rows.Scan(&k.Fingerprint, &k.Principal, &k.Type, &k.Blob, &k.Comment, &k.CreatedAt); err != nil {
			return nil, fmt.Errorf("read keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// writeKeys runs fn in one write transaction and, when fn reports that it
// changed what sshd may let in (a key, a principal's disabled flag),
// rewrites the key index inside that transaction, before it commits: the
// index is never behind a committed change (see keyindex). Should the
// commit fail after the rename, the index is rewritten again from what the
// database holds.
func writeKeys(ctx context.Context, db *store.DB, fn func(tx *sql.Tx) (changed bool, err error)) error {
	wrote := false
	err := db.Write(ctx, func(tx *sql.Tx) error {
		changed, err := fn(tx)
		if err != nil || !changed {
			return err
		}
		if err := writeIndex(ctx, tx, db); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	if err != nil && wrote {
		if rerr := WriteKeyIndex(ctx, db); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	return err
}

// WriteKeyIndex rewrites the key index of db from what it holds now (init
// does, so that an upgraded or restored root gets one).
func WriteKeyIndex(ctx context.Context, db *store.DB) error {
	return db.Write(ctx, func(tx *sql.Tx) error { return writeIndex(ctx, tx, db) })
}

// writeIndex writes the key files beside db's record. A record on
// PostgreSQL keeps no index that keys-command reads: another host may
// change the keys, and a file of this host's would go on letting in a key
// removed there. With no index keys-command (the awk, collab-hook-fast)
// asks the record itself, so a key added on any host is let in at once.
// It keeps the outage index instead (writeOutage).
func writeIndex(ctx context.Context, q store.Querier, db *store.DB) error {
	dbPath := db.Beside()
	if db.Postgres() {
		for _, p := range []string{keyindex.Path(dbPath), keyindex.AuthorizedPath(dbPath)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", p, err)
			}
		}
		return writeOutage(ctx, q, dbPath)
	}
	es, err := indexEntries(ctx, q)
	if err != nil {
		return err
	}
	if err := writeIndexFile(keyindex.Path(dbPath), es); err != nil {
		return err
	}
	return writeAuthorized(ctx, q, dbPath, es, keyindex.MaxAuthorized)
}

// writeIndexFile writes es as a key index at path, with the database's
// own mode: the forge's user and its group read it.
func writeIndexFile(path string, es []keyindex.Entry) error {
	b, err := keyindex.Format(es)
	if err != nil {
		return err
	}
	return keyindex.Write(path, b, store.FileMode)
}

// indexEntries are the keys of every enabled principal.
func indexEntries(ctx context.Context, q store.Querier) ([]keyindex.Entry, error) {
	var es []keyindex.Entry
	err := store.Each(ctx, q, `SELECT k.type, k.blob, k.principal FROM keys k JOIN principals p ON p.name = k.principal
		WHERE p.disabled = 0 ORDER BY k.type, k.blob`, nil, func(rows *sql.Rows) error {
		var e keyindex.Entry
		if err := rows.Scan(&e.Type, &e.Blob, &e.Principal); err != nil {
			return err
		}
		es = append(es, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read keys for the key index: %w", err)
	}
	return es, nil
}

// writeOutage writes the outage index beside the record at dbPath
// (keyindex.OutagePath): what keys-command answers from when the record
// on PostgreSQL does not answer, so that a user whose key the forge knew
// reaches serve and is told to try again later (exit 6), where sshd would
// otherwise refuse the login as if the key were unknown. A key it still
// holds but that another host removed since gets no further: serve checks
// the principal and the key in the record, and refuses while it cannot.
func writeOutage(ctx context.Context, q store.Querier, dbPath string) error {
	es, err := indexEntries(ctx, q)
	if err != nil {
		return err
	}
	return writeIndexFile(keyindex.OutagePath(dbPath), es)
}

// KeepOutageIndex rewrites the outage index of a record on PostgreSQL
// every interval until ctx ends, so that it follows the keys changed on
// other hosts (collab-web runs it on every host); on SQLite it returns at
// once. A round that fails is logged and the next one tries again.
func KeepOutageIndex(ctx context.Context, db *store.DB, every time.Duration, log *slog.Logger) {
	if !db.Postgres() {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := writeOutage(ctx, db.R(), db.Beside()); err != nil && ctx.Err() == nil {
			log.Warn("outage key index not rewritten", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// writeAuthorized writes the authorized_keys file where the root's setting
// names the binary for it and there are at most max keys, and removes it
// where not: a file left behind would still let in a key removed since,
// and past max, sshd's parse of every line costs a login more than the
// command (keyindex.MaxAuthorized).
func writeAuthorized(ctx context.Context, q store.Querier, dbPath string, es []keyindex.Entry, max int) error {
	path := keyindex.AuthorizedPath(dbPath)
	bin, err := authorizedBinary(ctx, q)
	if err != nil {
		return err
	}
	if bin == "" || len(es) > max {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", path, err)
		}
		return nil
	}
	b, err := keyindex.FormatAuthorized(Command{Binary: bin, Root: filepath.Dir(dbPath)}, es)
	if err != nil {
		return err
	}
	return keyindex.Write(path, b, store.FileMode)
}

// RestoreKeyFiles writes the key index of a restored root, and its
// authorized_keys file, where the setting turns it on, naming binary.
func RestoreKeyFiles(ctx context.Context, db *store.DB, binary string) error {
	bin, err := authorizedBinary(ctx, db.R())
	if err != nil {
		return err
	}
	if bin == "" {
		return WriteKeyIndex(ctx, db)
	}
	return SetAuthorizedKeys(ctx, db, binary)
}

// authorizedBinary is the collab-hook the root's authorized_keys setting
// names, or "" where the file is off (unset, or keyindex.Off).
func authorizedBinary(ctx context.Context, q store.Querier) (string, error) {
	bin, err := store.Setting(ctx, q, keyindex.SettingAuthorizedKeys)
	if err != nil || bin == keyindex.Off {
		return "", err
	}
	return bin, nil
}

// SetAuthorizedKeys sets the root's authorized_keys setting (the binary,
// or keyindex.Off) and writes or removes the file in the same transaction.
func SetAuthorizedKeys(ctx context.Context, db *store.DB, value string) error {
	if err := keyindex.CheckBinary(value); err != nil {
		return err
	}
	return writeKeys(ctx, db, func(tx *sql.Tx) (bool, error) {
		return true, store.SetSetting(ctx, tx, keyindex.SettingAuthorizedKeys, value)
	})
}

// Owner returns the enabled principal owning the key given as sshd's %t
// and %k, or "" when there is none.
func Owner(ctx context.Context, q store.Querier, typ, blob string) (string, error) {
	var name string
	err := q.QueryRowContext(ctx, `SELECT k.principal FROM keys k JOIN principals p ON p.name = k.principal
		WHERE k.type = ? AND k.blob = ? AND p.disabled = 0`, typ, blob).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up key: %w", err)
	}
	return name, nil
}

// KeysCommand answers sshd's AuthorizedKeysCommand for the key given as
// %t and %k: its authorized_keys line, or "" when no enabled principal owns
// it. It reads the key index beside the database at dbPath, and the
// record at loc itself only where the index cannot answer (missing, say,
// in a root made before the index existed) or the record is on PostgreSQL
// (where another host may have changed the keys); there, while the record
// does not answer, the outage index (writeOutage).
func KeysCommand(ctx context.Context, c Command, dbPath, loc, typ, blob string) (string, error) {
	if !store.IsURL(loc) {
		line, err := keyindex.Answer(c, dbPath, typ, blob)
		if !errors.Is(err, keyindex.ErrUnusable) {
			return line, err
		}
	}
	name, err := ownerInDB(ctx, loc, typ, blob)
	if fault.KindOf(err) == fault.Unavailable {
		// The record does not answer: the outage index lets in whom the
		// forge knew, for serve to tell them so (writeOutage).
		if known, lerr := keyindex.Lookup(keyindex.OutagePath(dbPath), typ, blob); lerr == nil && known != "" {
			name, err = known, nil
		}
	}
	if err != nil || name == "" {
		return "", err
	}
	return c.AuthorizedLine(name, typ+" "+blob)
}

func ownerInDB(ctx context.Context, dbPath, typ, blob string) (string, error) {
	db, err := store.OpenNoMigrate(ctx, dbPath)
	if err != nil {
		return "", fault.Default(err, "forge database unavailable")
	}
	defer db.Close()
	return Owner(ctx, db.R(), typ, blob)
}

// Command is how authorized_keys lines start the forced command.
type Command = keyindex.Command

// WriteAuthorizedKeys writes a whole authorized_keys file: one line per key
// of every enabled principal.
func WriteAuthorizedKeys(ctx context.Context, q store.Querier, c Command, w io.Writer) error {
	ks, err := queryKeys(ctx, q, `JOIN principals p ON p.name = k.principal WHERE p.disabled = 0`)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# Written by collab-hook authorized-keys; regenerate rather than edit.\n")
	for _, k := range ks {
		l, err := c.AuthorizedLine(k.Principal, k.Line())
		if err != nil {
			return err
		}
		b.WriteString(l + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write authorized keys: %w", err)
	}
	return nil
}
