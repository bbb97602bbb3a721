package webhook

import (
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decoder walks the YAML node tree of a configuration file, collecting problems with their
// lines rather than stopping at the first.
type decoder struct {
	file     string
	getenv   func(string) (string, bool)
	digest   hash.Hash // of the file and every secret source read
	problems []Problem
}

func (d *decoder) addf(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.problems = append(d.problems, Problem{Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

var (
	yamlLineRe    = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	secretEntryRe = regexp.MustCompile(`\.secrets\[\d+\]$`)
)

func (d *decoder) decodeFile(data []byte) *Config {
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
		d.addf(nil, "", "the file is empty: add receivers")
		return nil
	}
	return d.config(doc.Content[0])
}

// fields returns the values of the mapping n by key. It reports a node that is not a mapping,
// keys not in known (with the accepted ones), and keys given twice.
func (d *decoder) fields(n *yaml.Node, field string, known ...string) map[string]*yaml.Node {
	n = deref(n)
	if n == nil {
		return map[string]*yaml.Node{}
	}
	if n.Kind != yaml.MappingNode {
		if isNull(n) {
			return map[string]*yaml.Node{}
		}
		d.addf(n, field, "is a %s, want a mapping with the keys %s", kindName(n), strings.Join(known, ", "))
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		switch {
		case key == "value" && secretEntryRe.MatchString(field):
			d.addf(k, join(field, key), "secrets are never written in the configuration: put the secret in a file (file:) or an environment variable (env:)")
		case !slices.Contains(known, key):
			d.addf(k, join(field, key), "unknown key: the keys here are %s", strings.Join(known, ", "))
		case out[key] != nil:
			d.addf(k, join(field, key), "given twice (first on line %d): keep one", out[key].Line)
		default:
			out[key] = v
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
		d.addf(n, field, "is a %s, want a string", kindName(n))
		return ""
	}
	return n.Value
}

// strs reads a sequence of strings (a single string is refused: the lists are always lists).
func (d *decoder) strs(n *yaml.Node, field string) []string {
	n = deref(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.addf(n, field, "is a %s, want a list: [%s]", kindName(n), n.Value)
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		out = append(out, d.str(c, fmt.Sprintf("%s[%d]", field, i)))
	}
	return out
}

// items reads a sequence of nodes.
func (d *decoder) items(n *yaml.Node, field string) []*yaml.Node {
	n = deref(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.addf(n, field, "is a %s, want a list", kindName(n))
		return nil
	}
	return n.Content
}

// positiveInt reads a positive integer; def when absent.
func (d *decoder) positiveInt(n *yaml.Node, field string, def int) int {
	if n == nil {
		return def
	}
	s := d.str(n, field)
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		d.addf(n, field, "%q is not a positive integer: give a number of at least 1 (default %d)", s, def)
		return def
	}
	return v
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

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
