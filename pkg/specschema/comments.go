package specschema

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
)

// comments are the doc comments of Go types and their fields, by "importpath.Type" (the
// comment's first sentence) and "importpath.Type.Field" (the whole comment), on one line each.
type comments map[string]string

// readComments reads the doc comments of the module's packages pkgs ("pkg/rollout") from their
// source under root, leaving out the tests.
func readComments(root string, pkgs ...string) (comments, error) {
	out := comments{}
	for _, pkg := range pkgs {
		fset := token.NewFileSet()
		files, err := parseDir(fset, filepath.Join(root, filepath.FromSlash(pkg)))
		if err != nil {
			return nil, fmt.Errorf("read the doc comments of %s: %w", pkg, err)
		}
		importPath := module + "/" + pkg
		p, err := doc.NewFromFiles(fset, files, importPath, doc.PreserveAST)
		if err != nil {
			return nil, fmt.Errorf("read the doc comments of %s: %w", pkg, err)
		}
		for _, t := range p.Types {
			key := importPath + "." + t.Name
			out[key] = oneLine(p.Synopsis(t.Doc))
			out.addFields(key, t.Decl)
		}
	}
	return out, nil
}

// parseDir parses the Go files of dir that are not tests, with their comments.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	entries, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, name := range entries {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Go files in %s: %w", dir, fs.ErrNotExist)
	}
	return files, nil
}

// addFields adds the comments of the fields of the struct type declared in decl, under typeKey.
func (c comments) addFields(typeKey string, decl *ast.GenDecl) {
	for _, spec := range decl.Specs {
		ts, ok := spec.(*ast.TypeSpec)
		if !ok {
			continue
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, f := range st.Fields.List {
			text := f.Doc.Text()
			if text == "" {
				text = f.Comment.Text()
			}
			for _, name := range f.Names {
				if text != "" && name.IsExported() {
					c[typeKey+"."+name.Name] = oneLine(text)
				}
			}
		}
	}
}

// lookup is the description of struct type t (field "") or of its field: the field's comment,
// else the comment of the field's type (Unmatched, OnFailure...).
func (c comments) lookup(t reflect.Type, field string) string {
	key := t.PkgPath() + "." + t.Name()
	if field == "" {
		return c[key]
	}
	if s := c[key+"."+field]; s != "" {
		return s
	}
	f, ok := t.FieldByName(field)
	if !ok {
		return ""
	}
	ft := f.Type
	for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
		ft = ft.Elem()
	}
	return c[ft.PkgPath()+"."+ft.Name()]
}

// oneLine joins a comment's lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
