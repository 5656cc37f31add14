package dbfile

import (
	"testing"

	collab "github.com/collab-forge/collab"
)

func TestMigrations(t *testing.T) {
	for _, tc := range []struct {
		schema string
		steps  int
		ok     bool
	}{
		{"-- migrate 1\nCREATE TABLE a(x);\n-- migrate 2\nCREATE TABLE b(x);\n", 2, true},
		{"-- header\n-- migrate 1\nSELECT 1;\n", 1, true},
		{"-- migrate 2\nSELECT 1;\n", 0, false},
		{"-- migrate 1\n-- migrate 3\n", 0, false},
	} {
		steps, err := Migrations(tc.schema)
		if tc.ok && Known(tc.schema) != len(steps) {
			t.Errorf("Known(%q) = %d, want %d", tc.schema, Known(tc.schema), len(steps))
		}
		if (err == nil) != tc.ok || len(steps) != tc.steps {
			t.Errorf("Migrations(%q) = %d steps, %v", tc.schema, len(steps), err)
		}
	}
}

func TestKnownSchema(t *testing.T) {
	steps, err := Migrations(collab.Schema)
	if err != nil || Known(collab.Schema) != len(steps) {
		t.Fatalf("Known = %d, Migrations = %d, %v", Known(collab.Schema), len(steps), err)
	}
}
