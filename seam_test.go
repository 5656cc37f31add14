package collab_test

// The store seam of docs/scale.md: the use-case layer reaches the
// database only through internal/store's DB (Write, Read, R, Ping, the cached Settings and the clock Now) and
// its Tx and Querier, which it hands to the domain packages; the SQL,
// and so the dialect, lives in those packages. A PostgreSQL store then
// replaces internal/store and the domain packages' SQL, not the use cases.

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// seamMethods are the methods of *store.DB a use case may call.
var seamMethods = []string{"Write", "Read", "R", "Ping", "Settings", "Now"}

// sqlText is a string that reads as an SQL statement (collab writes its
// SQL's keywords in capitals).
var sqlText = regexp.MustCompile(`^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|PRAGMA|BEGIN|SAVEPOINT|CREATE|ALTER|DROP|VACUUM|ATTACH)\s+\S`)

// TestOpsReachesDatabaseOnlyThroughStore: internal/ops imports no
// database package (database/sql, a driver), runs no SQL text, calls no
// method of a database/sql value, and of *store.DB only the seam's.
func TestOpsReachesDatabaseOnlyThroughStore(t *testing.T) {
	if v := seamViolations(t, module+"/internal/ops"); len(v) > 0 {
		t.Errorf("internal/ops reaches the database around the store seam:\n%s", strings.Join(v, "\n"))
	}
}

// TestSeamCheckFindsViolations: the check sees each kind of violation
// where there is one: internal/leases holds SQL and runs it itself, and
// internal/backup calls *store.DB beyond the seam.
func TestSeamCheckFindsViolations(t *testing.T) {
	for pkg, wants := range map[string][]string{
		"internal/leases": {`imports "database/sql"`, "SQL text", "(*database/sql.Tx).ExecContext"},
		"internal/backup": {"(*store.DB).CopyTo beyond the seam"},
	} {
		v := strings.Join(seamViolations(t, module+"/"+pkg), "\n")
		for _, want := range wants {
			if !strings.Contains(v, want) {
				t.Errorf("the seam check does not see %s in %s:\n%s", want, pkg, v)
			}
		}
	}
}

// seamViolations lists what in pkg's non-test files reaches the database
// other than through the store seam.
func seamViolations(t *testing.T, pkg string) []string {
	t.Helper()
	c := typeCheck(t, pkg)
	var out []string
	add := func(pos token.Pos, format string, args ...any) {
		out = append(out, fmt.Sprintf("  %s: %s", c.fset.Position(pos), fmt.Sprintf(format, args...)))
	}
	for _, f := range c.files {
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if databasePackage(path) {
				add(imp.Pos(), "imports %q", path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && sqlText.MatchString(s) {
					add(lit.Pos(), "SQL text %q", firstWords(s))
				}
				return true
			}
			fn, call := c.callee(n)
			if fn == nil {
				return true
			}
			recv := fn.Type().(*types.Signature).Recv()
			switch {
			case recv == nil && databasePackage(fn.Pkg().Path()):
				add(call.Pos(), "calls %s.%s", fn.Pkg().Path(), fn.Name())
			case recv == nil:
			case databasePackage(fn.Pkg().Path()):
				add(call.Pos(), "calls (%s).%s", types.TypeString(recv.Type(), nil), fn.Name())
			case types.TypeString(recv.Type(), nil) == "*"+module+"/internal/store.DB" && !slices.Contains(seamMethods, fn.Name()):
				add(call.Pos(), "calls (*store.DB).%s beyond the seam (%s)", fn.Name(), strings.Join(seamMethods, ", "))
			}
			return true
		})
	}
	return out
}

// databasePackage: database/sql and its driver interface, and the SQL
// drivers collab uses or a port would.
func databasePackage(path string) bool {
	for _, p := range []string{"database/sql", "modernc.org/sqlite", "modernc.org/libc", "github.com/mattn/go-sqlite3",
		"github.com/jackc/pgx", "github.com/lib/pq"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func firstWords(s string) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(len(f), 4)], " ")
}
