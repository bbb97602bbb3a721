package diff

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// DefaultContextLines is how many unchanged lines surround each change of a diff (nelm's
// --diff-context-lines default).
const DefaultContextLines = 3

// Header names the two sides of a diff on its "---" and "+++" lines.
type Header struct {
	From, To string
}

// Text is the unified diff between two versions of one object as YAML, after Clean and Mask
// with s: from is the live object (nil when it does not exist), to the planned one (nil when
// it is deleted). It is "" when both look the same. h heads the diff.
func Text(from, to *unstructured.Unstructured, s Sensitivity, h Header, context int) (string, error) {
	a, err := objectYAML(from, s)
	if err != nil {
		return "", err
	}
	b, err := objectYAML(to, s)
	if err != nil {
		return "", err
	}
	return Unified(a, b, h.From, h.To, context), nil
}

// objectYAML is obj cleaned, masked and encoded as YAML with sorted keys; "" for nil.
func objectYAML(obj *unstructured.Unstructured, s Sensitivity) (string, error) {
	if obj == nil {
		return "", nil
	}
	y, err := yaml.Marshal(Mask(Clean(obj), s).Object)
	if err != nil {
		// The encoder's message quotes no values; name the object only.
		return "", fmt.Errorf("encode %s/%s as YAML: %w", obj.GetKind(), obj.GetName(), err)
	}
	return string(y), nil
}

// Unified is the unified diff of two texts, with context unchanged lines around each change
// (negative: DefaultContextLines): a "--- fromName" and a "+++ toName" line, then "@@" hunks.
// It is "" when the texts are equal. A text without a final newline gets one.
func Unified(a, b, fromName, toName string, context int) string {
	if a == b {
		return ""
	}
	if context < 0 {
		context = DefaultContextLines
	}
	al, bl := lines(a), lines(b)
	// No automatic junk heuristic: YAML repeats lines such as "- name: app" often, and
	// treating them as junk makes hunks larger and harder to read.
	m := difflib.NewMatcherWithJunk(al, bl, false, nil)
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", fromName, toName)
	for _, g := range m.GetGroupedOpCodes(context) {
		first, last := g[0], g[len(g)-1]
		fmt.Fprintf(&w, "@@ -%s +%s @@\n", hunkRange(first.I1, last.I2), hunkRange(first.J1, last.J2))
		for _, c := range g {
			switch c.Tag {
			case 'e':
				writeLines(&w, " ", al[c.I1:c.I2])
			case 'd':
				writeLines(&w, "-", al[c.I1:c.I2])
			case 'i':
				writeLines(&w, "+", bl[c.J1:c.J2])
			case 'r':
				writeLines(&w, "-", al[c.I1:c.I2])
				writeLines(&w, "+", bl[c.J1:c.J2])
			}
		}
	}
	return w.String()
}

// lines splits s into lines with their newlines; "" has none.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return strings.SplitAfter(s, "\n")[:strings.Count(s, "\n")]
}

func writeLines(w *strings.Builder, prefix string, ls []string) {
	for _, l := range ls {
		w.WriteString(prefix)
		w.WriteString(l)
	}
}

// hunkRange formats a hunk's line range as diff does: "start,length", or "start" for one
// line; an empty range starts at the line before it.
func hunkRange(start, stop int) string {
	n := stop - start
	switch n {
	case 1:
		return fmt.Sprint(start + 1)
	case 0:
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
