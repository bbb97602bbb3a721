package webhook

import (
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/sealane/sealane/pkg/slug"
)

// TemplateFields are the fields of a push the deploy templates see: {{ .Branch }}.
var TemplateFields = []string{"Commit", "ShortCommit", "Branch", "Tag", "Ref", "Repository", "Sender"}

// shortCommitLen is the length of .ShortCommit, git's default abbreviation.
const shortCommitLen = 7

// templateText is a parsed template with its text (for messages).
type templateText struct {
	text string
	tmpl *template.Template
	// slugs is set when the template calls slug: its result, too long for its kind, is
	// slugged as a whole (trimmed, with a hash), as "review-{{ .Branch | slug }}" needs.
	slugs bool
	// kept are a rollout name's actions over the cluster, written back into the result for
	// the coordinator (non-nil for a rollout name).
	kept []string
}

// parseTemplate parses text as a template of a deploy field. Its one function, slug, makes a
// valid name of the field's kind: a release name (at most 53 characters) in the release, a
// namespace name (at most 63) everywhere else. It is executed once over a sample push, so that
// an unknown field is a load error rather than a failed deploy.
func parseTemplate(field, text string, release bool) (templateText, error) {
	slugFn := slug.Namespace
	if release {
		slugFn = slug.Release
	}
	return parseWith(field, text, slugFn, false)
}

// parsePairTemplate parses a set or setString "key=value" template whose every action's
// result is one literal for Helm's --set parser (helmLiteral): a pushed branch
// "x,securityContext.privileged=true" is one value, never a second key.
func parsePairTemplate(field, text string) (templateText, error) {
	return parseWith(field, text, slug.Namespace, true)
}

func parseWith(field, text string, slugFn func(string) string, literal bool) (templateText, error) {
	t, err := template.New(field).Option("missingkey=error").
		Funcs(template.FuncMap{"slug": slugFn, helmKeyFunc: helmKey, helmValueFunc: helmValue}).Parse(text)
	if err != nil {
		return templateText{}, fmt.Errorf("%s", cleanTemplateError(err))
	}
	tt := templateText{text: text, tmpl: t}
	for _, tr := range t.Templates() {
		if tr.Tree == nil {
			continue
		}
		tt.slugs = tt.slugs || callsSlug(tr.Tree.Root)
		if literal {
			literalActions(tr.Tree, tr.Tree.Root, new(bool))
		}
	}
	sample := map[string]string{}
	for _, f := range TemplateFields {
		sample[f] = "sample"
	}
	if _, err := tt.render(sample); err != nil {
		return templateText{}, err
	}
	return tt, nil
}

func (t templateText) render(data map[string]string) (string, error) {
	if t.tmpl == nil {
		return t.text, nil
	}
	var b strings.Builder
	if err := t.tmpl.Execute(&b, data); err != nil {
		fields := "." + strings.Join(TemplateFields, " .")
		if t.kept != nil {
			fields += "; and, as whole actions the coordinator renders per cluster, {{ .Cluster }} and {{ .Labels.KEY }}"
		}
		return "", fmt.Errorf("template %q: %s (the fields are %s)", t.text, cleanTemplateError(err), fields)
	}
	out := b.String()
	for i, k := range t.kept {
		out = strings.Replace(out, keptMark(i), k, 1)
	}
	return out, nil
}

// clusterActionRe matches an action of a rollout route's namespace or release over the
// cluster: {{ .Cluster }}, {{ .Labels.KEY }} or {{ index .Labels "KEY" }}.
var clusterActionRe = regexp.MustCompile(`\{\{-?\s*(\.Cluster|\.Labels\.[A-Za-z_][A-Za-z0-9_]*|index\s+\.Labels\s+"[^"]*")\s*-?\}\}`)

// keptMark stands for the i-th kept action while the rest of the template is rendered: NUL
// bytes, which no push field renders into a name that passes.
func keptMark(i int) string { return fmt.Sprintf("\x00%d\x00", i) }

// parseRolloutName parses a rollout route's namespace or release: its actions over the
// cluster are kept as written for the coordinator, the rest is a template over the push.
func parseRolloutName(field, text string, release bool) (templateText, error) {
	kept := clusterActionRe.FindAllString(text, -1)
	i := 0
	masked := clusterActionRe.ReplaceAllStringFunc(text, func(string) string { i++; return keptMark(i - 1) })
	slugFn := slug.Namespace
	if release {
		slugFn = slug.Release
	}
	tt, err := parseWith(field, masked, slugFn, false)
	if err != nil {
		return templateText{}, fmt.Errorf("%w (and, as whole actions the coordinator renders per cluster, {{ .Cluster }} and {{ .Labels.KEY }})", err)
	}
	tt.text, tt.kept = text, append([]string{}, kept...)
	return tt, nil
}

// literalActions makes every action below n that prints (no variable declaration) end in
// an escaper, as html/template adds its own: helmKey before the pair's first unescaped '='
// (inValue false), helmValue after it.
func literalActions(tree *parse.Tree, n parse.Node, inValue *bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			literalActions(tree, c, inValue)
		}
	case *parse.TextNode:
		if _, _, ok := cutPair(string(n.Text)); ok {
			*inValue = true
		}
	case *parse.ActionNode:
		if len(n.Pipe.Decl) == 0 {
			fn := helmKeyFunc
			if *inValue {
				fn = helmValueFunc
			}
			id := parse.NewIdentifier(fn).SetTree(tree).SetPos(n.Pos)
			n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
		}
	case *parse.IfNode:
		literalBranches(tree, n.List, n.ElseList, inValue)
	case *parse.RangeNode:
		literalBranches(tree, n.List, n.ElseList, inValue)
	case *parse.WithNode:
		literalBranches(tree, n.List, n.ElseList, inValue)
	}
}

// literalBranches escapes both branches of a control action, each from the context before
// it; after it the pair is in its value if either branch reached it.
func literalBranches(tree *parse.Tree, list, elseList *parse.ListNode, inValue *bool) {
	a, b := *inValue, *inValue
	literalActions(tree, list, &a)
	literalActions(tree, elseList, &b)
	*inValue = a || b
}

// callsSlug reports whether the template below n calls slug.
func callsSlug(n parse.Node) bool {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return false
		}
		for _, c := range n.Nodes {
			if callsSlug(c) {
				return true
			}
		}
	case *parse.ActionNode:
		return callsSlug(n.Pipe)
	case *parse.PipeNode:
		if n == nil {
			return false
		}
		for _, c := range n.Cmds {
			for _, a := range c.Args {
				if callsSlug(a) {
					return true
				}
			}
		}
	case *parse.IdentifierNode:
		return n.Ident == "slug"
	case *parse.IfNode:
		return callsSlug(n.Pipe) || callsSlug(n.List) || callsSlug(n.ElseList)
	case *parse.RangeNode:
		return callsSlug(n.Pipe) || callsSlug(n.List) || callsSlug(n.ElseList)
	case *parse.WithNode:
		return callsSlug(n.Pipe) || callsSlug(n.List) || callsSlug(n.ElseList)
	}
	return false
}

// The escapers parsePairTemplate appends to every action's pipeline.
const (
	helmKeyFunc   = "_sealaneHelmKey"
	helmValueFunc = "_sealaneHelmValue"
)

// Helm's --set parser reads a backslash-escaped character as itself, in keys and values alike.
// In a key '=', '[', ',' and '.' are syntax; in a value ',' ends it and a leading '{' starts a
// list.
const (
	helmKeySpecial   = `\,=.[]{}`
	helmValueSpecial = `\,{}`
)

// helmKey escapes v's text as one literal part of a --set key.
func helmKey(v any) string { return escapeRunes(fmt.Sprint(v), helmKeySpecial) }

// helmValue escapes v's text as (part of) one literal --set value.
func helmValue(v any) string { return escapeRunes(fmt.Sprint(v), helmValueSpecial) }

func escapeRunes(s, special string) string {
	if !strings.ContainsAny(s, special) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(special, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cutPair splits a rendered "key=value" at its first unescaped '='.
func cutPair(s string) (key, value string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '=':
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// templateErrorPrefixRe is text/template's "template: NAME:1:2: executing "NAME" " prefix: the
// message already names the field.
var templateErrorPrefixRe = regexp.MustCompile(`^template: [^:]*(:\d+)*: (executing "[^"]*" )?`)

func cleanTemplateError(err error) string {
	return templateErrorPrefixRe.ReplaceAllString(err.Error(), "")
}

// templateData is what the templates see of push p at its (lower-case) commit.
func templateData(p Push, commit string) map[string]string {
	short := commit
	if len(short) > shortCommitLen {
		short = short[:shortCommitLen]
	}
	return map[string]string{
		"Commit": commit, "ShortCommit": short, "Branch": p.Branch, "Tag": p.Tag,
		"Ref": p.Ref, "Repository": p.Repository, "Sender": p.Sender,
	}
}

var (
	// namespaceRe is a DNS-1123 label, what the apiserver accepts (as pkg/slug checks it).
	namespaceRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// releaseRe is Helm 3's release name check (a lower-case DNS-1123 subdomain).
	releaseRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// validName says whether s is a valid release name (release) or namespace name: what slug
// keeps unchanged, checked without hashing.
func validName(s string, release bool) bool {
	if release {
		return len(s) <= slug.ReleaseMaxLen && releaseRe.MatchString(s)
	}
	return len(s) <= slug.NamespaceMaxLen && namespaceRe.MatchString(s)
}

// tooLong reports whether s is a valid name of its kind but for its length: such a name is
// made to fit by slugName.
func tooLong(s string, release bool) bool {
	if release {
		return len(s) > slug.ReleaseMaxLen && releaseRe.MatchString(s)
	}
	return len(s) > slug.NamespaceMaxLen && namespaceRe.MatchString(s)
}

// slugName is werf's slug of a name of the kind: trimmed, with a hash of the whole appended.
func slugName(s string, release bool) string {
	if release {
		return slug.Release(s)
	}
	return slug.Namespace(s)
}
