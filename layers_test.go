package collab_test

// The layering rules of HACKING.md, checked with plain `go list` and the
// type checker over the compiler's export data. (What collab-hook may link
// is cmd/collab-hook's own test, deps_test.go.)

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/collab-forge/collab"

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	ImportMap  map[string]string
	DepsErrors []struct{ Err string }
	Error      *struct{ Err string }
}

// goList runs go list -json with args and decodes its stream of packages.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		if p.Error != nil {
			t.Fatalf("go list %v: %s: %s", args, p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// transports only parse input, call internal/ops and render: the verbs,
// the web, and the push path's fronts and hooks.
var transports = []string{module + "/internal/verbs", module + "/internal/web", module + "/internal/hookrun", module + "/internal/serve", module + "/internal/hookhost"}

// TestTransportsGoThroughOps: the transports neither run transactions or
// SQL themselves nor call a domain function that takes the database (a
// store.Querier, *store.DB, *sql.Tx or *sql.DB): every use case goes
// through internal/ops. The hooks (hookrun), serve and collab-web's git
// front (hookhost) are transports too: a push's use cases are ops.Push's.
func TestTransportsGoThroughOps(t *testing.T) {
	for _, pkg := range transports {
		t.Run(strings.TrimPrefix(pkg, module+"/"), func(t *testing.T) {
			if v := violations(t, pkg); len(v) > 0 {
				t.Errorf("%d calls bypass internal/ops:\n%s", len(v), strings.Join(v, "\n"))
			}
		})
	}
}

// TestLayerCheckFindsBypasses: the check of TestTransportsGoThroughOps
// sees a transaction and domain calls where they are (ops itself).
func TestLayerCheckFindsBypasses(t *testing.T) {
	v := strings.Join(violations(t, module+"/internal/ops"), "\n")
	for _, want := range []string{"(*store.DB).Write", "issues.New", "leases.Acquire"} {
		if !strings.Contains(v, want) {
			t.Errorf("the check does not see %s in internal/ops:\n%s", want, v)
		}
	}
}

// violations type-checks pkg from the compiler's export data and lists
// its calls that touch the database other than through ops.
func violations(t *testing.T, pkg string) []string {
	t.Helper()
	c := typeCheck(t, pkg)
	var out []string
	for _, f := range c.files {
		ast.Inspect(f, func(n ast.Node) bool {
			if fn, call := c.callee(n); fn != nil {
				if why := bypass(fn); why != "" {
					out = append(out, fmt.Sprintf("  %s: %s", c.fset.Position(call.Pos()), why))
				}
			}
			return true
		})
	}
	return out
}

// checked is a package's non-test files, type-checked.
type checked struct {
	fset  *token.FileSet
	files []*ast.File
	info  *types.Info
}

// callee is the function n calls when n is a call of a named function
// or method.
func (c checked) callee(n ast.Node) (*types.Func, *ast.CallExpr) {
	call, ok := n.(*ast.CallExpr)
	if !ok {
		return nil, nil
	}
	var id *ast.Ident
	switch fun := call.Fun.(type) {
	case *ast.SelectorExpr:
		id = fun.Sel
	case *ast.Ident:
		id = fun
	default:
		return nil, nil
	}
	fn, ok := c.info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return nil, nil
	}
	return fn, call
}

// typeCheck type-checks pkg's non-test files from the compiler's export
// data of its dependencies.
func typeCheck(t *testing.T, pkg string) checked {
	t.Helper()
	deps := goList(t, "-deps", "-export", pkg)
	exports := map[string]string{}
	var self listed
	for _, p := range deps {
		exports[p.ImportPath] = p.Export
		if p.ImportPath == pkg {
			self = p
		}
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range self.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(self.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	lookup := func(path string) (io.ReadCloser, error) {
		if m, ok := self.ImportMap[path]; ok {
			path = m
		}
		e := exports[path]
		if e == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(e)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}}
	if _, err := conf.Check(pkg, fset, files, info); err != nil {
		t.Fatalf("type-check %s: %v", pkg, err)
	}
	return checked{fset: fset, files: files, info: info}
}

// domain are the packages whose functions that take the database are use
// cases' business, not a transport's.
var domain = []string{"access", "branches", "checks", "events", "issues", "leases", "patches", "principals", "repos", "review", "store", "submit", "tokens"}

// bypass says why a call of fn from a transport bypasses ops, or "".
func bypass(fn *types.Func) string {
	sig := fn.Type().(*types.Signature)
	if recv := sig.Recv(); recv != nil {
		switch r := types.TypeString(recv.Type(), nil); r {
		case "*" + module + "/internal/store.DB":
			if fn.Name() == "Close" {
				// A front that opened the database for one request
				// closes it: that is no use case.
				return ""
			}
			return "(*store.DB)." + fn.Name()
		case "*database/sql.DB", "*database/sql.Tx":
			return "(" + strings.TrimPrefix(r, "*database/") + ")." + fn.Name() + " (SQL)"
		}
		return ""
	}
	path := fn.Pkg().Path()
	if !strings.HasPrefix(path, module+"/internal/") || !slices.Contains(domain, strings.TrimPrefix(path, module+"/internal/")) {
		return ""
	}
	params := sig.Params()
	for i := range params.Len() {
		switch types.TypeString(params.At(i).Type(), nil) {
		case module + "/internal/store.Querier", "*" + module + "/internal/store.DB", "*database/sql.Tx", "*database/sql.DB":
			return fn.Pkg().Name() + "." + fn.Name() + " takes the database"
		}
	}
	return ""
}

// TestOneWriterPerTable: every table of schema.sql is written (INSERT,
// UPDATE, DELETE) by the Go code of one package only (benchmarks, which
// generate their data straight into a database, aside).
func TestOneWriterPerTable(t *testing.T) {
	schema, err := os.ReadFile("schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for _, m := range regexp.MustCompile(`(?m)^CREATE TABLE (\w+)`).FindAllSubmatch(schema, -1) {
		tables = append(tables, string(m[1]))
	}
	if len(tables) < 10 {
		t.Fatalf("found only %d tables in schema.sql", len(tables))
	}
	writers := map[string]map[string]bool{}
	for _, p := range goList(t, "./internal/...", "./cmd/...") {
		for _, name := range p.GoFiles {
			src, err := os.ReadFile(filepath.Join(p.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, tb := range tables {
				if regexp.MustCompile(`(?i)\b(INSERT( OR \w+)? INTO|UPDATE|DELETE FROM) ` + tb + `\b`).Match(src) {
					if writers[tb] == nil {
						writers[tb] = map[string]bool{}
					}
					writers[tb][strings.TrimPrefix(p.ImportPath, module+"/")] = true
				}
			}
		}
	}
	for _, tb := range tables {
		if n := len(writers[tb]); n > 1 {
			t.Errorf("table %s is written by %d packages: %v", tb, n, slices.Sorted(maps.Keys(writers[tb])))
		}
	}
	if !writers["reviews"]["internal/patches"] {
		t.Errorf("the check does not see internal/patches write the reviews table: %v", writers["reviews"])
	}
}

// TestLayoutCoversEveryPackage: HACKING.md's layout table names every
// package, or a folder holding it (`bench/`).
func TestLayoutCoversEveryPackage(t *testing.T) {
	hacking, err := os.ReadFile("HACKING.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range goList(t, "./...") {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if rel == "" {
			rel = "embed.go"
		}
		covered := false
		for dir := rel; dir != "." && dir != "" && !covered; dir = filepath.Dir(dir) {
			covered = bytes.Contains(hacking, []byte("`"+dir+"`")) || bytes.Contains(hacking, []byte("`"+dir+"/`"))
		}
		if !covered {
			t.Errorf("HACKING.md's layout does not name %s", rel)
		}
	}
}
