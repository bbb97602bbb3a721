// Package specfile reads YAML configuration and spec files field by field (the webhook
// receivers, rollout specs), collecting every problem with its line and field path — so that a
// file with five mistakes gets five "file:line: field: what to do" lines, not the first one.
package specfile

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one problem of a file: its line, the field, and what to do.
type Problem struct {
	// Line is the line of the file (from 1); 0 when it is not known (flags, an empty file).
	Line int
	// Field is the path of the field, "waves[1].maxParallel"; empty for the whole file.
	Field   string
	Message string
}

// String is the problem as Error prints it, without the file name.
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is every problem of a file.
type Error struct {
	File     string
	Problems []Problem
}

// Error prints one problem a line: "rollout.yaml:14: waves[1].maxParallel: ...".
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		sep := ":"
		if p.Line == 0 {
			sep = ": "
		}
		lines[i] = e.File + sep + p.String()
	}
	return strings.Join(lines, "\n")
}

// Decoder walks a YAML node tree, recording problems, the line of every field it saw and the
// fields of the wrong kind.
type Decoder struct {
	Problems []Problem
	// Lines holds the line of every field seen, by path ("waves[1].maxParallel").
	Lines map[string]int
	// Mistyped holds the fields of the wrong kind (a string for a list), so that a check of
	// the decoded value does not report them missing as well (Covered).
	Mistyped map[string]bool
	// RefuseKey, when set, is asked about every key of a mapping before it is checked against
	// the known keys; a message refuses the key with it (a secret written inline).
	RefuseKey func(field, key string) (message string, refused bool)
}

// NewDecoder returns an empty Decoder.
func NewDecoder() *Decoder { return &Decoder{Lines: map[string]int{}, Mistyped: map[string]bool{}} }

// Addf records a problem of field at node n's line (0 without a node).
func (d *Decoder) Addf(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.Problems = append(d.Problems, Problem{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

// Typef records a field of the wrong kind.
func (d *Decoder) Typef(n *yaml.Node, field, format string, args ...any) {
	d.Mistyped[field] = true
	d.Addf(n, field, format, args...)
}

// Covered reports whether a problem of field is already explained by a mistyped field in it.
func (d *Decoder) Covered(field string) bool {
	for f := range d.Mistyped {
		if f == field || strings.HasPrefix(f, field+".") || strings.HasPrefix(f, field+"[") {
			return true
		}
	}
	return false
}

// LineOf is the line of field, or of its nearest enclosing field that was seen; 0 if none.
func (d *Decoder) LineOf(field string) int {
	for {
		if l, ok := d.Lines[field]; ok {
			return l
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			return d.Lines[""]
		}
		field = field[:i]
	}
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Document parses data into its root node; nil, with the problems recorded, when it cannot
// or when it is empty (then empty is the problem's message).
func (d *Decoder) Document(data []byte, empty string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		for _, msg := range strings.Split(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n"), "\n") {
			msg = strings.TrimSpace(msg)
			if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
				line, _ := strconv.Atoi(m[1])
				d.Problems = append(d.Problems, Problem{Line: line, Message: "invalid YAML: " + m[2]})
			} else {
				d.Problems = append(d.Problems, Problem{Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
			}
		}
		return nil
	}
	if len(doc.Content) == 0 {
		d.Addf(nil, "", "%s", empty)
		return nil
	}
	d.Lines[""] = doc.Content[0].Line
	return doc.Content[0]
}

// Fields returns the values of the mapping n by key: empty for an absent or null node, nil
// for a node that is not a mapping. It reports that, keys not in known (naming the accepted
// ones), and keys given twice.
func (d *Decoder) Fields(n *yaml.Node, field string, known ...string) map[string]*yaml.Node {
	n = Deref(n)
	if n == nil || IsNull(n) {
		return map[string]*yaml.Node{}
	}
	if n.Kind != yaml.MappingNode {
		d.Typef(n, field, "is a %s, want a mapping with the keys %s", KindName(n), strings.Join(known, ", "))
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if d.RefuseKey != nil {
			if msg, refused := d.RefuseKey(field, key); refused {
				d.Addf(k, Join(field, key), "%s", msg)
				continue
			}
		}
		switch {
		case !slices.Contains(known, key):
			d.Addf(k, Join(field, key), "unknown key: the keys here are %s", strings.Join(known, ", "))
		case out[key] != nil:
			d.Addf(k, Join(field, key), "given twice (first on line %d): keep one", out[key].Line)
		default:
			out[key] = v
			d.Lines[Join(field, key)] = k.Line
		}
	}
	return out
}

// Str reads a scalar as a string; a null is "".
func (d *Decoder) Str(n *yaml.Node, field string) string {
	n = Deref(n)
	if n == nil || IsNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		d.Typef(n, field, "is a %s, want a string", KindName(n))
		return ""
	}
	return n.Value
}

// Strs reads a list of strings (a single string is refused: lists are always lists).
func (d *Decoder) Strs(n *yaml.Node, field string) []string {
	n = Deref(n)
	if n == nil || IsNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.Typef(n, field, "is a %s, want a list: [%s]", KindName(n), n.Value)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		item := fmt.Sprintf("%s[%d]", field, i)
		d.Lines[item] = c.Line
		out = append(out, d.Str(c, item))
	}
	return out
}

// Items reads a list of nodes.
func (d *Decoder) Items(n *yaml.Node, field string) []*yaml.Node {
	n = Deref(n)
	if n == nil || IsNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.Typef(n, field, "is a %s, want a list", KindName(n))
		return nil
	}
	for i, c := range n.Content {
		d.Lines[fmt.Sprintf("%s[%d]", field, i)] = c.Line
	}
	return n.Content
}

// Enum reads one of values; "" when absent or not one of them.
func (d *Decoder) Enum(n *yaml.Node, field string, values ...string) string {
	if n == nil {
		return ""
	}
	s := d.Str(n, field)
	if !slices.Contains(values, s) {
		d.Addf(n, field, "%q is not one of %s", s, strings.Join(values, ", "))
		return ""
	}
	return s
}

// Deref follows aliases to the node they name.
func Deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// IsNull reports a null scalar.
func IsNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// KindName names a node's kind for a message: mapping, list or string.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "string"
}

// Join is the path of key in field ("waves[1]" + "name").
func Join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}
