package webhook

import (
	"fmt"
	"regexp"
	"strings"
	"text/template"

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
	t, err := template.New(field).Option("missingkey=error").
		Funcs(template.FuncMap{"slug": slugFn}).Parse(text)
	if err != nil {
		return templateText{}, fmt.Errorf("%s", cleanTemplateError(err))
	}
	tt := templateText{text: text, tmpl: t}
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
		return "", fmt.Errorf("template %q: %s (the fields are .%s)", t.text, cleanTemplateError(err),
			strings.Join(TemplateFields, " ."))
	}
	return b.String(), nil
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
