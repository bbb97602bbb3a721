package chart

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	helmchart "helm.sh/helm/v3/pkg/chart"
)

// SecretFileFuncs are the template functions that return a decrypted file from the chart's
// secret/ directory: werf's name and its short alias.
var SecretFileFuncs = []string{"werf_secret_file", "secret_file"}

// secretFileTemplate is the named template the secret-file functions are rewritten into.
const secretFileTemplate = "sealane.secretFile"

// Helm's engine takes no extra functions, so `werf_secret_file "x"` is rewritten to
// `include "sealane.secretFile" "x"` (piped arguments work the same way), and that named
// template is generated from the decrypted files.
var (
	actionRe       = regexp.MustCompile(`(?s){{.*?}}`)
	secretFuncRe   = regexp.MustCompile(`(^|[\s(|])(` + strings.Join(SecretFileFuncs, "|") + `)\b`)
	secretFuncName = regexp.MustCompile(`\b(` + strings.Join(SecretFileFuncs, "|") + `)\b`)
)

// withSecretFiles rewrites the secret-file functions in every template of ch (subcharts
// included) and adds the named template serving files, keyed by their path under secret/.
// Rewritten templates replace their entries in the (copied) Templates slices; the File values
// themselves, shared with the caller's chart, are not modified.
func withSecretFiles(ch *helmchart.Chart, files map[string][]byte) {
	used := false
	var rewrite func(c *helmchart.Chart)
	rewrite = func(c *helmchart.Chart) {
		for i, t := range c.Templates {
			if !secretFuncName.Match(t.Data) {
				continue
			}
			used = true
			data := actionRe.ReplaceAllFunc(t.Data, func(action []byte) []byte {
				return secretFuncRe.ReplaceAll(action, []byte(`${1}include "`+secretFileTemplate+`"`))
			})
			c.Templates[i] = &helmchart.File{Name: t.Name, Data: data}
		}
		for _, d := range c.Dependencies() {
			rewrite(d)
		}
	}
	rewrite(ch)
	if !used {
		return
	}
	ch.Templates = append(ch.Templates, &helmchart.File{Name: "templates/_sealane_secret_files.tpl", Data: secretFilesTemplate(files)})
}

// secretFilesTemplate generates the named template: one branch per file, content as a
// quoted string literal, and a clear failure for a file that is not there.
func secretFilesTemplate(files map[string][]byte) []byte {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "{{- define %q -}}\n", secretFileTemplate)
	for i, n := range names {
		kw := "else if"
		if i == 0 {
			kw = "if"
		}
		fmt.Fprintf(&b, "{{- %s eq . %s -}}{{ %s }}\n", kw, strconv.Quote(n), strconv.Quote(string(files[n])))
	}
	if len(names) > 0 {
		b.WriteString("{{- else -}}")
	}
	known := "none"
	if len(names) > 0 {
		known = strings.Join(names, ", ")
	}
	fmt.Fprintf(&b, "{{- fail (printf \"werf_secret_file: no secret file %%q under secret/ (known: %%s)\" . %s) -}}", strconv.Quote(known))
	if len(names) > 0 {
		b.WriteString("{{- end -}}")
	}
	b.WriteString("\n{{- end -}}\n")
	return []byte(b.String())
}

// EncryptedSecretFiles returns the files under the chart's secret/ directory (still
// encrypted), keyed by their path below secret/.
func EncryptedSecretFiles(ch *helmchart.Chart) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range ch.Files {
		if rest, ok := strings.CutPrefix(f.Name, "secret/"); ok && rest != "" {
			out[rest] = f.Data
		}
	}
	return out
}

// SecretValuesFile returns the chart's own secret-values.yaml (still encrypted), if any.
func SecretValuesFile(ch *helmchart.Chart) ([]byte, bool) {
	for _, f := range ch.Files {
		if f.Name == "secret-values.yaml" {
			return f.Data, true
		}
	}
	return nil, false
}

// UsesSecretFiles reports whether a template of ch or of its subcharts calls a secret-file
// function, i.e. whether the secret/ files must be decrypted to render it.
func UsesSecretFiles(ch *helmchart.Chart) bool {
	for _, t := range ch.Templates {
		if secretFuncName.Match(t.Data) {
			return true
		}
	}
	for _, d := range ch.Dependencies() {
		if UsesSecretFiles(d) {
			return true
		}
	}
	return false
}
