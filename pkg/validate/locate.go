package validate

import (
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/sealane/sealane/pkg/manifest"
)

// step is one element of a field path: a map key or, when index >= 0, an array index.
type step struct {
	key   string
	index int
}

// fieldPath locates a field inside an object.
type fieldPath []step

func (p fieldPath) child(key string) fieldPath {
	return append(p[:len(p):len(p)], step{key: key, index: -1})
}

// String renders p the way Kubernetes field errors do: ".key" for ordinary keys, "[key]" for
// keys a dot would make ambiguous (label and annotation keys), "[i]" for indexes; e.g.
// "spec.containers[0].image", "metadata.annotations[werf.io/weight]".
func (p fieldPath) String() string {
	var b strings.Builder
	for _, s := range p {
		switch {
		case s.index >= 0:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		case s.key == "" || strings.ContainsAny(s.key, ".[]/ "):
			b.WriteByte('[')
			b.WriteString(s.key)
			b.WriteByte(']')
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		}
	}
	return b.String()
}

// parentField drops the last element of a path rendered by fieldPath.String.
func parentField(field string) string {
	if strings.HasSuffix(field, "]") {
		if i := strings.LastIndexByte(field, '['); i >= 0 {
			return field[:i]
		}
	}
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[:i]
	}
	return ""
}

// identity is what names an object in a manifest; fields that are missing or not strings are "".
type identity struct {
	apiVersion, kind, namespace, name string
}

func (id identity) key() string {
	return id.apiVersion + "\x00" + id.kind + "\x00" + id.namespace + "\x00" + id.name
}

func identityOf(o manifest.Object) identity {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	md, _ := o.Obj.Object["metadata"].(map[string]any)
	return identity{str(o.Obj.Object, "apiVersion"), str(o.Obj.Object, "kind"), str(md, "namespace"), str(md, "name")}
}

// identityOfNode is identityOf for a YAML node; only string scalars count, as in identityOf.
func identityOfNode(n *yaml.Node) identity {
	md := mapValue(n, "metadata")
	return identity{strScalar(mapValue(n, "apiVersion")), strScalar(mapValue(n, "kind")),
		strScalar(mapValue(md, "namespace")), strScalar(mapValue(md, "name"))}
}

// separatorFunc reports whether a line separates YAML documents.
type separatorFunc func(line string) bool

// manifestSeparator matches the separators manifest.Parse splits on.
func manifestSeparator(line string) bool {
	t := strings.TrimRight(line, " \t\r")
	return t == "---" || strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "---\t")
}

// helmSeparator matches the separators Helm splits a rendered template on
// (releaseutil.SplitManifests: "---" at the start of a line).
func helmSeparator(line string) bool { return strings.HasPrefix(line, "---") }

// docIndex finds the YAML nodes of a rendered text's documents, their lines counted from the
// text's first line. It splits and parses lazily: texts without problems cost nothing.
type docIndex struct {
	text    string
	sep     separatorFunc
	split   bool
	starts  []int              // first line of each document
	bodies  []string           // text of each document
	roots   map[int]*yaml.Node // by first line; nil when not YAML
	byID    map[string][]*yaml.Node
	indexed bool
}

func newDocIndex(text string, sep separatorFunc) *docIndex {
	return &docIndex{text: text, sep: sep}
}

func (x *docIndex) splitDocs() {
	if x.split {
		return
	}
	x.split = true
	x.roots = map[int]*yaml.Node{}
	if x.text == "" {
		return
	}
	start, from := 1, 0
	line, pos := 1, 0
	for pos <= len(x.text) {
		end := strings.IndexByte(x.text[pos:], '\n')
		next := pos + end + 1
		if end < 0 {
			end, next = len(x.text)-pos, len(x.text)+1
		}
		if x.sep(x.text[pos : pos+end]) {
			x.starts = append(x.starts, start)
			x.bodies = append(x.bodies, x.text[from:pos])
			start, from = line+1, min(next, len(x.text))
		}
		pos = next
		line++
	}
	x.starts = append(x.starts, start)
	x.bodies = append(x.bodies, x.text[from:])
}

// root parses document i, returning its root node with lines of the whole text.
func (x *docIndex) root(i int) *yaml.Node {
	start := x.starts[i]
	if n, done := x.roots[start]; done {
		return n
	}
	var doc yaml.Node
	var n *yaml.Node
	if err := yaml.Unmarshal([]byte(x.bodies[i]), &doc); err == nil && len(doc.Content) > 0 {
		n = doc.Content[0]
		shiftLines(n, start-1)
	}
	x.roots[start] = n
	return n
}

// at returns the root node of the document starting at line start, nil when there is none or
// it is not YAML.
func (x *docIndex) at(start int) *yaml.Node {
	x.splitDocs()
	i := sort.SearchInts(x.starts, start)
	if i == len(x.starts) || x.starts[i] != start {
		return nil
	}
	return x.root(i)
}

// find returns the node of the occur-th (0-based) object with identity id, items of Lists
// included; nil when there is none.
func (x *docIndex) find(id identity, occur int) *yaml.Node {
	x.index()
	nodes := x.byID[id.key()]
	if occur < len(nodes) {
		return nodes[occur]
	}
	return nil
}

// objects returns the nodes of all objects in document order, items of Lists included.
func (x *docIndex) objects() []*yaml.Node {
	x.splitDocs()
	var out []*yaml.Node
	for i := range x.starts {
		n := x.root(i)
		if n == nil || n.Kind != yaml.MappingNode {
			continue
		}
		items := mapValue(n, "items")
		if items != nil && items.Kind == yaml.SequenceNode && strings.HasSuffix(strScalar(mapValue(n, "kind")), "List") {
			out = append(out, items.Content...)
			continue
		}
		out = append(out, n)
	}
	return out
}

func (x *docIndex) index() {
	if x.indexed {
		return
	}
	x.indexed = true
	x.byID = map[string][]*yaml.Node{}
	for _, n := range x.objects() {
		k := identityOfNode(n).key()
		x.byID[k] = append(x.byID[k], n)
	}
}

func shiftLines(n *yaml.Node, by int) {
	n.Line += by
	for _, c := range n.Content {
		shiftLines(c, by)
	}
}

// itemOf returns the node of the object with identity id inside root: root itself, or the item
// of a List document.
func itemOf(root *yaml.Node, id identity) *yaml.Node {
	if strScalar(mapValue(root, "kind")) == id.kind {
		return root
	}
	items := mapValue(root, "items")
	if items == nil || items.Kind != yaml.SequenceNode {
		return root
	}
	for _, it := range items.Content {
		if identityOfNode(it) == id {
			return it
		}
	}
	return root
}

// lineOf returns the line of path below n: of the key for map entries, of the closest
// enclosing field that exists when path itself does not (a missing field); 0 for a nil n.
func lineOf(n *yaml.Node, path fieldPath) int {
	if n == nil {
		return 0
	}
	line := n.Line
	for _, s := range path {
		next, at := descend(n, s)
		if next == nil {
			break
		}
		n, line = next, at
	}
	return line
}

// descend follows one step from n, returning the child's value node and the line to report
// (the key's line for map entries).
func descend(n *yaml.Node, s step) (*yaml.Node, int) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return nil, 0
	}
	if s.index >= 0 {
		if n.Kind != yaml.SequenceNode || s.index >= len(n.Content) {
			return nil, 0
		}
		c := n.Content[s.index]
		return c, c.Line
	}
	if n.Kind != yaml.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == s.key {
			return n.Content[i+1], n.Content[i].Line
		}
	}
	return nil, 0
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	v, _ := descend(n, step{key: key, index: -1})
	return v
}

// strScalar is the value of a string scalar, "" for anything else.
func strScalar(n *yaml.Node) string {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return ""
	}
	return n.Value
}
