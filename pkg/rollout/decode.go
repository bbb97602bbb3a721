package rollout

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks the YAML node tree of a spec, collecting every problem with its line rather
// than stopping at the first.
type decoder struct {
	problems []Problem
	// lines holds the line of every field seen, by path ("waves[1].maxParallel").
	lines map[string]int
	// mistyped holds the fields of the wrong kind (a string for a list): validation does not
	// report them missing as well.
	mistyped map[string]bool
}

func newDecoder() *decoder { return &decoder{lines: map[string]int{}, mistyped: map[string]bool{}} }

// typef reports a field of the wrong kind.
func (d *decoder) typef(n *yaml.Node, field, format string, args ...any) {
	d.mistyped[field] = true
	d.addf(n, field, format, args...)
}

// covered reports a validation problem of field that a mistyped field in it already explains.
func (d *decoder) covered(field string) bool {
	for f := range d.mistyped {
		if f == field || strings.HasPrefix(f, field+".") || strings.HasPrefix(f, field+"[") {
			return true
		}
	}
	return false
}

// lineOf is the line of field, or of its nearest enclosing field that was seen; 0 if none.
func (d *decoder) lineOf(field string) int {
	for {
		if l, ok := d.lines[field]; ok {
			return l
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			return d.lines[""]
		}
		field = field[:i]
	}
}

func (d *decoder) addf(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.problems = append(d.problems, Problem{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses data into its root node; nil (with the problems recorded) when it cannot.
func (d *decoder) document(data []byte) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		for _, msg := range strings.Split(strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n"), "\n") {
			msg = strings.TrimSpace(msg)
			if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
				line, _ := strconv.Atoi(m[1])
				d.problems = append(d.problems, Problem{Line: line, Message: "invalid YAML: " + m[2]})
			} else {
				d.problems = append(d.problems, Problem{Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")})
			}
		}
		return nil
	}
	if len(doc.Content) == 0 {
		d.addf(nil, "", "the spec is empty: give chart, release, namespace, clusters and waves")
		return nil
	}
	d.lines[""] = doc.Content[0].Line
	return doc.Content[0]
}

// fields returns the values of the mapping n by key. It reports a node that is not a mapping,
// keys not in known (naming the accepted ones), and keys given twice.
func (d *decoder) fields(n *yaml.Node, field string, known ...string) map[string]*yaml.Node {
	n = deref(n)
	if n == nil || isNull(n) {
		return map[string]*yaml.Node{}
	}
	if n.Kind != yaml.MappingNode {
		d.typef(n, field, "is a %s, want a mapping with the keys %s", kindName(n), strings.Join(known, ", "))
		return map[string]*yaml.Node{}
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !slices.Contains(known, k.Value):
			d.addf(k, join(field, k.Value), "unknown key: the keys here are %s", strings.Join(known, ", "))
		case out[k.Value] != nil:
			d.addf(k, join(field, k.Value), "given twice (first on line %d): keep one", out[k.Value].Line)
		default:
			out[k.Value] = v
			d.lines[join(field, k.Value)] = k.Line
		}
	}
	return out
}

// str reads a scalar as a string; a null is "".
func (d *decoder) str(n *yaml.Node, field string) string {
	n = deref(n)
	if n == nil || isNull(n) {
		return ""
	}
	if n.Kind != yaml.ScalarNode {
		d.typef(n, field, "is a %s, want a string", kindName(n))
		return ""
	}
	return n.Value
}

// strs reads a list of strings (a single string is refused: lists are always lists).
func (d *decoder) strs(n *yaml.Node, field string) []string {
	n = deref(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.typef(n, field, "is a %s, want a list: [%s]", kindName(n), n.Value)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		item := fmt.Sprintf("%s[%d]", field, i)
		d.lines[item] = c.Line
		out = append(out, d.str(c, item))
	}
	return out
}

// items reads a list of nodes.
func (d *decoder) items(n *yaml.Node, field string) []*yaml.Node {
	n = deref(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.typef(n, field, "is a %s, want a list", kindName(n))
		return nil
	}
	for i, c := range n.Content {
		d.lines[fmt.Sprintf("%s[%d]", field, i)] = c.Line
	}
	return n.Content
}

// duration reads a Go duration ("10m", "1h30m") of at least 0; 0 when absent.
func (d *decoder) duration(n *yaml.Node, field string, positive bool) time.Duration {
	if n == nil {
		return 0
	}
	v, err := parseDuration(d.str(n, field), positive)
	if err != nil {
		d.addf(n, field, "%v", err)
	}
	return v
}

// quantity reads a Quantity of at least minimum; the zero Quantity when absent.
func (d *decoder) quantity(n *yaml.Node, field string, minimum int) Quantity {
	if n == nil {
		return Quantity{}
	}
	q, err := ParseQuantity(d.str(n, field), minimum)
	if err != nil {
		d.addf(n, field, "%v", err)
	}
	return q
}

// enum reads one of values; "" when absent or not one of them.
func (d *decoder) enum(n *yaml.Node, field string, values ...string) string {
	if n == nil {
		return ""
	}
	s := d.str(n, field)
	if !slices.Contains(values, s) {
		d.addf(n, field, "%q is not one of %s", s, strings.Join(values, ", "))
		return ""
	}
	return s
}

// parseDuration reads a Go duration, refusing negative ones (and 0 when positive).
func parseDuration(s string, positive bool) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration: use Go syntax, e.g. 90s, 10m, 1h30m", s)
	case v < 0 || positive && v == 0:
		return 0, fmt.Errorf("%q: give a duration above 0", s)
	}
	return v, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "string"
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}
