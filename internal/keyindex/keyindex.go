// Package keyindex is the file beside the database that answers sshd's
// AuthorizedKeysCommand without opening SQLite: one "TYPE BLOB PRINCIPAL"
// line per key of every enabled principal. sshd runs the command twice per
// login, and a Go process that opens the database costs several times one
// that reads a small file.
//
// The file is a copy, never the authority: principals rewrites it (write to
// a temporary file, then rename) inside every transaction that changes a
// key or a principal's disabled flag, before that transaction commits, so a
// crash in between leaves it ahead of the database, not behind: a revoked
// key is already gone from it. serve still checks the principal and, with
// ExposeAuthInfo, the key against the database at every login. A missing,
// unreadable or truncated file makes the caller fall back to the database.
//
// This package reads and formats the file and the line keys-command prints
// (Answer); it must stay free of SQLite and other heavy packages, as it is
// on the path of every ssh login (cmd/collab-hook-fast).
package keyindex

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/collab-forge/collab/internal/access"
	"github.com/collab-forge/collab/internal/dbfile"
	"github.com/collab-forge/collab/internal/fault"
	"github.com/collab-forge/collab/internal/layout"
	"github.com/collab-forge/collab/internal/shellwords"
	"github.com/collab-forge/collab/internal/text"
)

// header and trailer frame the file; a file without both (a crash while it
// was written, another program's file) is not trusted.
const (
	header  = "# collab key index v1: TYPE BLOB PRINCIPAL; written by collab-hook, do not edit\n"
	trailer = "# end\n"
)

// ErrUnusable says the index cannot answer: the caller asks the database.
var ErrUnusable = errors.New("key index unusable")

// Path is the index of the database at dbPath.
func Path(dbPath string) string { return dbPath + ".keys" }

// OutagePath is the index a host whose record is on PostgreSQL keeps for
// when the record does not answer: the same format, under a name that
// neither keys-command.awk nor Answer reads, since it may be behind the
// record (internal/principals).
func OutagePath(dbPath string) string { return dbPath + ".keys-outage" }

// Entry is one key of an enabled principal.
type Entry struct{ Type, Blob, Principal string }

// valid says a field can go into a line and be found again: not empty, no
// blank or control character (sshd's %t and %k never hold one).
func valid(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// Format renders the whole file.
func Format(entries []Entry) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(header)
	for _, e := range entries {
		if !valid(e.Type) || !valid(e.Blob) || !valid(e.Principal) {
			return nil, fmt.Errorf("key index: bad entry %q %q %q", e.Type, e.Blob, e.Principal)
		}
		b.WriteString(e.Type + " " + e.Blob + " " + e.Principal + "\n")
	}
	b.WriteString(trailer)
	return b.Bytes(), nil
}

// Write replaces the file at path with content, with mode whatever the
// umask, atomically: a reader sees the old file or the new one, never a
// part. It syncs before the rename, so a power loss cannot leave a renamed
// but empty file.
func Write(path string, content []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".keys-*")
	if err != nil {
		return fmt.Errorf("write key index: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	if _, err := f.Write(content); err != nil {
		f.Close()
		return fmt.Errorf("write key index: %w", err)
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("write key index: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write key index: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write key index: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write key index: %w", err)
	}
	return nil
}

// Lookup returns the principal owning the key given as sshd's %t and %k,
// or "" when the index has no such key. It returns ErrUnusable (wrapped)
// when the file is missing, unreadable or incomplete.
func Lookup(path, typ, blob string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %s missing", ErrUnusable, path)
		}
		return "", fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	if !bytes.HasPrefix(b, []byte(header)) || !bytes.HasSuffix(b, []byte("\n"+trailer)) {
		return "", fmt.Errorf("%w: %s is incomplete", ErrUnusable, path)
	}
	if !valid(typ) || !valid(blob) {
		return "", nil // no key holds a blank; sshd never sends one
	}
	needle := []byte("\n" + typ + " " + blob + " ")
	i := bytes.Index(b, needle)
	if i < 0 {
		return "", nil
	}
	rest := b[i+len(needle):]
	name, _, ok := bytes.Cut(rest, []byte("\n"))
	if !ok || !valid(string(name)) {
		return "", fmt.Errorf("%w: %s has a bad line", ErrUnusable, path)
	}
	return string(name), nil
}

// Command is how authorized_keys lines start the forced command.
type Command struct {
	Binary string // absolute path of collab-hook
	Root   string // the forge root; omitted from the line when it is the default
}

// ForcedCommand returns "BINARY [--root ROOT] serve --as NAME", shell-quoted.
func (c Command) ForcedCommand(name string) (string, error) {
	for _, p := range []string{c.Binary, c.Root} {
		// The command sits inside command="…", where sshd only knows \" as
		// an escape; refuse rather than escape what should never occur.
		if strings.ContainsAny(p, "\"\\\n\r\x00") {
			return "", fault.New(fault.Usage, "path %q cannot go into authorized_keys", text.Clip(p))
		}
	}
	if !strings.HasPrefix(c.Binary, "/") {
		return "", fault.New(fault.Usage, "collab-hook path %q is not absolute", text.Clip(c.Binary))
	}
	if err := access.CheckName(name); err != nil {
		return "", err
	}
	cmd := shellwords.Quote(c.Binary)
	if c.Root != "" && c.Root != layout.DefaultRoot {
		cmd += " --root " + shellwords.Quote(c.Root)
	}
	return cmd + " serve --as " + name, nil
}

// AuthorizedLine is the authorized_keys line of key (its text, "TYPE BLOB
// [COMMENT]") for principal.
func (c Command) AuthorizedLine(principal, key string) (string, error) {
	fc, err := c.ForcedCommand(principal)
	if err != nil {
		return "", err
	}
	return `command="` + fc + `",restrict ` + key, nil
}

// Answer is keys-command's answer from the index beside the database at
// dbPath for the key given as sshd's %t and %k: its authorized_keys line,
// or "" when no enabled principal owns it. ErrUnusable (wrapped) says the
// index cannot answer and the database must; a database newer than this
// binary is refused as opening it would be (dbfile.Check).
func Answer(c Command, dbPath, typ, blob string) (string, error) {
	if err := dbfile.Check(dbPath); err != nil {
		return "", fault.Default(err, "forge database unavailable")
	}
	name, err := Lookup(Path(dbPath), typ, blob)
	if err != nil || name == "" {
		return "", err
	}
	return c.AuthorizedLine(name, typ+" "+blob)
}

// SettingAuthorizedKeys is the root setting that turns on the
// authorized_keys file beside the database (AuthorizedPath): the absolute
// path of the collab-hook its forced commands run, or "off". sshd reads a
// file for the price of an open, where even awk is a process start per
// lookup, twice per login; the file is rewritten with the index, in the
// same transaction, so it is never behind the database either.
const SettingAuthorizedKeys = "authorized_keys"

// Off is SettingAuthorizedKeys's value, and its default, for no file.
const Off = "off"

// MaxAuthorized is the most keys the authorized_keys file holds; past it
// there is no file, and sshd asks the command. sshd parses every line
// before the match, twice per login: with 10,000 keys that cost a login
// 74 ms of CPU where keys-command.awk cost 4 ms more than with one key,
// against its 18-20 ms of process starts, so the two cross near 2,700
// keys (measured on the machine of docs/deploy.md's figures).
const MaxAuthorized = 2000

// AuthorizedPath is the authorized_keys file of the database at dbPath.
func AuthorizedPath(dbPath string) string { return dbPath + ".authorized_keys" }

// CheckBinary refuses a SettingAuthorizedKeys value that is neither Off
// nor an absolute path that can go into a forced command.
func CheckBinary(value string) error {
	if value == Off {
		return nil
	}
	if _, err := (Command{Binary: value}).ForcedCommand("x"); err != nil {
		return fault.New(fault.Usage, "bad %s %q: want off or the absolute path of collab-hook", SettingAuthorizedKeys, text.Clip(value))
	}
	return nil
}

// FormatAuthorized renders the authorized_keys file: one line per entry,
// as Answer prints it.
func FormatAuthorized(c Command, entries []Entry) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Written by collab-hook with every key change (config " + SettingAuthorizedKeys + "); do not edit.\n")
	for _, e := range entries {
		l, err := c.AuthorizedLine(e.Principal, e.Type+" "+e.Blob)
		if err != nil {
			return nil, err
		}
		b.WriteString(l + "\n")
	}
	return b.Bytes(), nil
}
