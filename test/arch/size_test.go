package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The sizes a reader holds at once (issue 14): production files, functions and parameter lists
// past these are split, or their parameters grouped into a named struct.
const (
	maxFileLines     = 500
	maxFunctionLines = 80
	maxParameters    = 5
)

// TestProductionCodeSize fails for a production Go file over maxFileLines lines, or a function
// over maxFunctionLines lines or with more than maxParameters parameters (the receiver not
// counted). Tests, benchmarks and the test suites under test/ are not production code.
func TestProductionCodeSize(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	for _, name := range productionFiles(t, root) {
		f, err := parser.ParseFile(fset, filepath.Join(root, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		checked++
		if n := fset.Position(f.End()).Line; n > maxFileLines {
			t.Errorf("%s: %d lines, over %d: split it by what its parts do", name, n, maxFileLines)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			where := fmt.Sprintf("%s:%d %s", name, fset.Position(fn.Pos()).Line, funcName(fn))
			if n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1; n > maxFunctionLines {
				t.Errorf("%s: %d lines, over %d: split it into named steps", where, n, maxFunctionLines)
			}
			if n := paramCount(fn.Type.Params); n > maxParameters {
				t.Errorf("%s: %d parameters, over %d: group the ones that travel together in a struct", where, n, maxParameters)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: is the test run from test/arch?", checked)
	}
}

// productionFiles lists the production Go files under root, relative to it: not tests, not
// the suites under test/ and bench/, not hidden directories (the sandbox's build trees).
func productionFiles(t *testing.T, root string) []string {
	var names []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "test" || rel == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list Go files: %v", err)
	}
	return names
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	recv := fn.Recv.List[0].Type
	if star, ok := recv.(*ast.StarExpr); ok {
		recv = star.X
	}
	if idx, ok := recv.(*ast.IndexExpr); ok {
		recv = idx.X
	}
	if id, ok := recv.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

func paramCount(fields *ast.FieldList) int {
	n := 0
	for _, p := range fields.List {
		n += max(1, len(p.Names))
	}
	return n
}
