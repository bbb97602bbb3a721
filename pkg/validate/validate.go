// Package validate checks rendered manifests before they are deployed.
//
// Two kinds of checks run on every object:
//
//   - Hard checks (Result.Errors): the document is a YAML mapping; apiVersion, kind and
//     metadata.name are present; no two objects share API group, kind, namespace and name;
//     names, namespaces, label keys and values and annotation keys are valid for Kubernetes;
//     the values of the werf and Helm annotations the deploy engine acts on (werf.io/weight,
//     helm.sh/hook, werf.io/deploy-dependency-*, ...) are well-formed. Such an object cannot be
//     deployed as written.
//   - Schema checks against Kubernetes OpenAPI (Result.Warnings): unknown fields
//     (`redinessProbe`), wrong types, missing required fields, apiVersions a kind is not served
//     in. As in werf, they are printed and recorded on the object in the annotation
//     debug.werf.io/validation-messages (Result.Annotate), and the deploy goes on. Kinds the
//     schema does not have (custom resources) are skipped silently, as kubeconform does, and
//     listed in Result.Unchecked.
//
// The schema comes from the target cluster (FromDocument of kube.OpenAPIV2: CRDs installed
// there are covered) or, offline, from the schema embedded in the binary (Bundled). A Schema is immutable
// and safe for concurrent use: load it once and validate many manifests with it.
//
// Every issue names the object, the template it came from and the line of the offending field:
// in the template's rendered output when Options.Templates is given, and in the manifest.
//
// Violations of a chart's values.schema.json are not checked here: Helm's engine refuses to
// render with such values, and the renderer reports its error.
package validate

import (
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/manifest"
)

// Options configure a validation.
type Options struct {
	// Schema is the OpenAPI schema objects are checked against; nil runs the hard checks only.
	Schema *Schema
	// Templates are the rendered templates keyed by path as in the manifest's "# Source:"
	// comments (what Helm's engine.Render returns). When given, issues also name the line in
	// the template's rendered output (Issue.TemplateLine), and helm.sh/hook values that made
	// Helm leave a resource out of the manifest are reported.
	Templates map[string]string
}

// Manifest parses rendered (a manifest with "---" separators and "# Source:" comments, as Helm
// writes it) and validates every object in it. Documents that are not YAML objects are errors
// of the result, not of the parse; objs holds every object that parsed, in manifest order,
// whether it has problems or not. Manifest does no I/O and is safe to call concurrently.
func Manifest(rendered string, opts Options) (objs []manifest.Object, res *Result) {
	objs, err := manifest.ParseLenient(rendered)
	c := newChecker(rendered, opts)
	for _, e := range flatten(err) {
		c.parseError(e)
	}
	c.objects(objs)
	return objs, c.finish()
}

// Objects validates objs, parsed from rendered by manifest.Parse or manifest.ParseLenient.
// rendered is read only to find the lines of offending fields and may be "" (issues then name
// the document's first line). Objects does no I/O and is safe to call concurrently.
func Objects(objs []manifest.Object, rendered string, opts Options) *Result {
	c := newChecker(rendered, opts)
	c.objects(objs)
	return c.finish()
}

// finding is an issue before it is placed in the manifest.
type finding struct {
	sev  Severity
	code Code
	path fieldPath
	msg  string
	hint string
}

// checker collects the issues of one validation.
type checker struct {
	opts      Options
	res       Result
	manifest  *docIndex            // documents of the rendered manifest, by first line
	templates map[string]*docIndex // documents of the rendered templates, by identity
	unchecked map[schema.GroupVersionKind]bool
	listed    map[string]bool // identities (identityKey) of objs, for the dropped-hook check
}

func newChecker(rendered string, opts Options) *checker {
	return &checker{
		opts:      opts,
		manifest:  newDocIndex(rendered, manifestSeparator),
		templates: map[string]*docIndex{},
	}
}

func (c *checker) finish() *Result {
	if len(c.opts.Templates) > 0 {
		c.droppedHooks()
	}
	for gvk := range c.unchecked {
		c.res.Unchecked = append(c.res.Unchecked, gvk)
	}
	c.res.sort()
	return &c.res
}

// objects runs every check on objs.
func (c *checker) objects(objs []manifest.Object) {
	type first struct {
		o     manifest.Object
		occur int
	}
	var (
		seen   = make(map[string]first, len(objs)) // duplicate key -> first object
		occurs = make(map[string]int, len(objs))   // identity in its template -> objects so far
		fs     []finding
	)
	if len(c.opts.Templates) > 0 {
		c.listed = make(map[string]bool, len(objs))
	}
	for _, o := range objs {
		if o.Obj == nil {
			continue
		}
		id := identityOf(o)
		key := o.Source + "\x00" + id.key()
		occur := occurs[key]
		occurs[key]++
		if c.listed != nil {
			c.listed[key] = true
		}

		fs = checkObject(o.Obj.Object, fs[:0])
		if dk := duplicateKey(id); dk != "" {
			if f, dup := seen[dk]; dup {
				where := c.place(f.o, f.occur, namePath)
				fs = append(fs, finding{SeverityError, CodeDuplicate, namePath,
					"duplicate resource: also defined in " + where.Where(),
					"a resource may be defined only once: remove one of them or give them different names"})
			} else {
				seen[dk] = first{o, occur}
			}
		}
		if !unidentified(fs) {
			fs = c.checkSchema(o.Obj.Object, fs)
		}
		for _, f := range fs {
			i := c.place(o, occur, f.path)
			i.Severity, i.Code, i.Field, i.Message, i.Hint = f.sev, f.code, f.path.String(), f.msg, f.hint
			c.res.add(i)
		}
	}
}

// place returns an issue naming o and the lines of path in it. occur is the number of earlier
// objects of o's template with o's identity.
func (c *checker) place(o manifest.Object, occur int, path fieldPath) Issue {
	i := Issue{Object: manifest.RefOf(o.Obj), Source: o.Source, Doc: o.Doc, Line: o.Line}
	if o.Line > 0 {
		if root := c.manifest.at(o.Line); root != nil {
			if line := lineOf(itemOf(root, identityOf(o)), path); line > 0 {
				i.Line = line
			}
		}
	}
	if t, ok := c.opts.Templates[o.Source]; ok && o.Source != "" {
		idx := c.templates[o.Source]
		if idx == nil {
			idx = newDocIndex(t, helmSeparator)
			c.templates[o.Source] = idx
		}
		if n := idx.find(identityOf(o), occur); n != nil {
			i.TemplateLine = lineOf(n, path)
		}
	}
	return i
}

// unidentified reports whether fs says the object has no usable apiVersion or kind (or no
// metadata mapping), so that no schema applies.
func unidentified(fs []finding) bool {
	for _, f := range fs {
		switch {
		case f.code == CodeMissingAPIVersion, f.code == CodeInvalidAPIVersion, f.code == CodeMissingKind,
			f.code == CodeInvalidMetadata && len(f.path) == 1:
			return true
		}
	}
	return false
}

// duplicateKey is what makes two objects the same resource: API group, kind, namespace, name
// (namespaces as written: an object without one and one in the release namespace are not
// caught). "" when the object lacks a kind or name.
func duplicateKey(id identity) string {
	if id.kind == "" || id.name == "" {
		return ""
	}
	gv, _ := schema.ParseGroupVersion(id.apiVersion)
	return gv.Group + "\x00" + id.kind + "\x00" + id.namespace + "\x00" + id.name
}

// yamlLine finds the line number in the errors of sigs.k8s.io/yaml and yaml.v3.
var yamlLine = regexp.MustCompile(`\byaml: line (\d+): ?`)

// parseError records a document manifest.ParseLenient could not turn into an object.
func (c *checker) parseError(err error) {
	var me *manifest.Error
	if !errors.As(err, &me) {
		c.res.add(Issue{Severity: SeverityError, Code: CodeInvalidYAML, Message: err.Error()})
		return
	}
	i := Issue{Severity: SeverityError, Source: me.Source, Doc: me.Doc, Line: me.Line}
	switch {
	case errors.Is(me.Err, manifest.ErrNotObject):
		i.Code = CodeNotObject
		i.Message = me.Err.Error()
		i.Hint = "a document must be a Kubernetes object (apiVersion, kind, metadata, ...); look for stray text or a list at the top level"
	default:
		i.Code = CodeInvalidYAML
		i.Message = me.Err.Error()
		if m := yamlLine.FindStringSubmatchIndex(i.Message); m != nil && me.Line > 0 {
			// The line is relative to the document: make it the manifest's.
			n, _ := strconv.Atoi(i.Message[m[2]:m[3]])
			i.Line = me.Line + n - 1
			i.Message = i.Message[:m[0]] + i.Message[m[1]:]
		}
		i.Hint = "check the indentation and the quoting of values around that line"
	}
	c.res.add(i)
}

// flatten returns the errors joined in err.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// closest returns the candidate nearest to s by edit distance (ignoring case) when it is near
// enough to be a likely typo, else "".
func closest(s string, candidates []string) string {
	best, bestDist := "", max(2, len(s)/4)+1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
