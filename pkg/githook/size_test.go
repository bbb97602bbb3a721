package githook

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The size limits of the package's production code.
const (
	maxFileLines = 500
	maxFuncLines = 80
	maxParams    = 5
)

// TestCodeSize keeps production files, functions and parameter lists small.
func TestCodeSize(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "\n"); n > maxFileLines {
			t.Errorf("%s has %d lines, want at most %d", name, n, maxFileLines)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			fn, ok := n.(*ast.FuncDecl)
			if !ok {
				return true
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines {
				t.Errorf("%s: func %s has %d lines, want at most %d", name, fn.Name.Name, lines, maxFuncLines)
			}
			if params := fn.Type.Params.NumFields(); params > maxParams {
				t.Errorf("%s: func %s has %d parameters, want at most %d", name, fn.Name.Name, params, maxParams)
			}
			return false
		})
	}
}
