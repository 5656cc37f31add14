// Package dbfile reads what the forge needs of its database file without
// SQLite: the schema's migration steps (schema.sql) and the version in the
// file's header. keys-command checks the version on every login, from the
// lean collab-hook-fast too, which links no SQLite driver.
package dbfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	collab "github.com/collab-forge/collab"
	"github.com/collab-forge/collab/internal/fault"
)

// Migrations splits the schema at its "-- migrate N" lines; step i holds
// the SQL that takes user_version from i to i+1.
func Migrations(schema string) ([]string, error) {
	var steps []string
	cur := -1
	var b strings.Builder
	flush := func() {
		if cur >= 0 {
			steps = append(steps, b.String())
		}
		b.Reset()
	}
	for _, line := range strings.SplitAfter(schema, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- migrate "); ok {
			flush()
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil || n != len(steps)+1 {
				return nil, fmt.Errorf("schema.sql: migration %q out of order", strings.TrimSpace(line))
			}
			cur = n
			continue
		}
		if cur >= 0 {
			b.WriteString(line)
		}
	}
	flush()
	return steps, nil
}

// Newer is the refusal of a database whose schema version have is newer
// than the known one.
func Newer(have, known int) error {
	return fault.New(fault.Internal,
		"the forge database has schema version %d, newer than this collab knows (%d): run the newer collab binaries (or restore a backup made by this version)", have, known)
}

// Check refuses, as opening it would, a database at path whose schema is
// newer than this binary knows, reading only the file's header
// (user_version, bytes 60-63): for keys-command, which answers from the
// key index. The header is what the last checkpoint wrote; a migration
// still in the WAL shows once checkpointed, and everything that opens the
// database refuses it at once.
func Check(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("no forge database (run collab-hook init?): %w", err)
	}
	defer f.Close()
	var h [100]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return fmt.Errorf("read the header of %s: %w", path, err)
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return fmt.Errorf("%s is not an SQLite database", path)
	}
	if have, known := int(binary.BigEndian.Uint32(h[60:64])), Known(collab.Schema); have > known {
		return Newer(have, known)
	}
	return nil
}

// Known is the number of migrations in schema, as len(Migrations(schema))
// for a schema in order, counted without copying it: every login asks.
func Known(schema string) int {
	n := 0
	for line := range strings.Lines(schema) {
		if strings.HasPrefix(strings.TrimSpace(line), "-- migrate ") {
			n++
		}
	}
	return n
}
