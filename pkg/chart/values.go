package chart

import (
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"
)

// ValuesFile is a values file given with --values, carried by content so that it
// can travel through the pipeline.
type ValuesFile struct {
	Name    string `json:"name"`
	Content []byte `json:"content"`
}

// FileValue is one --set-file KEY=PATH, with the file's content already read.
type FileValue struct {
	Key     string `json:"key"`
	Name    string `json:"name,omitempty"`
	Content []byte `json:"content"`
}

// Inputs are the user-supplied values of a deploy: the equivalent of Helm's
// --values, --set, --set-string, --set-json, --set-file and --set-literal flags.
type Inputs struct {
	ValuesFiles []ValuesFile `json:"valuesFiles,omitempty"`
	// SecretValuesFiles are the --secret-values files as given, still encrypted: what travels
	// through the pipeline. The renderer decrypts them into SecretValues.
	SecretValuesFiles []ValuesFile `json:"secretValuesFiles,omitempty"`
	// SecretValues are decrypted secret values files — the chart's secret-values.yaml first,
	// then --secret-values in order — merged after ValuesFiles and before the --set family.
	// They never travel through the pipeline decrypted: the renderer fills them in.
	SecretValues []ValuesFile `json:"-"`
	Set          []string     `json:"set,omitempty"`
	SetString    []string     `json:"setString,omitempty"`
	SetJSON      []string     `json:"setJSON,omitempty"`
	SetFile      []FileValue  `json:"setFile,omitempty"`
	SetLiteral   []string     `json:"setLiteral,omitempty"`
	// ReplyKey is a payload key (64 hex characters) the requester made for this request: the
	// renderer seals what it returns to the requester (notes, a plan report) with it. It
	// travels only inside the sealed inputs and is no value.
	ReplyKey string `json:"replyKey,omitempty"`
}

// UserValues merges in like Helm's values.Options.MergeValues, with werf's secret values
// between the files and the flags: values files in order (deep merge, later wins), secret
// values files, then --set-json, --set, --set-string, --set-file and --set-literal. Errors
// name the file (with its line) or the expression.
func UserValues(in Inputs) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range append(append([]ValuesFile(nil), in.ValuesFiles...), in.SecretValues...) {
		m, err := parseValuesFile(f)
		if err != nil {
			return nil, err
		}
		base = mergeMaps(base, m)
	}
	for _, expr := range in.SetJSON {
		if err := strvals.ParseJSON(expr, base); err != nil {
			return nil, fmt.Errorf("--set-json %q: %w", expr, err)
		}
	}
	for _, expr := range in.Set {
		if err := strvals.ParseInto(expr, base); err != nil {
			return nil, fmt.Errorf("--set %q: %w", expr, err)
		}
	}
	for _, expr := range in.SetString {
		if err := strvals.ParseIntoString(expr, base); err != nil {
			return nil, fmt.Errorf("--set-string %q: %w", expr, err)
		}
	}
	for _, fv := range in.SetFile {
		content := string(fv.Content)
		reader := func([]rune) (any, error) { return content, nil }
		// The right-hand side is a placeholder: the reader returns the content.
		if err := strvals.ParseIntoFile(fv.Key+"=-", base, reader); err != nil {
			return nil, fmt.Errorf("--set-file %s=%s: %w", fv.Key, fv.Name, err)
		}
	}
	for _, expr := range in.SetLiteral {
		if err := strvals.ParseLiteralInto(expr, base); err != nil {
			return nil, fmt.Errorf("--set-literal %q: %w", expr, err)
		}
	}
	return base, nil
}

// parseValuesFile decodes one values file as Helm does (sigs.k8s.io/yaml), with
// errors of the form `values file "<name>": line N: <problem>`.
func parseValuesFile(f ValuesFile) (map[string]any, error) {
	var doc any
	if err := yaml.Unmarshal(f.Content, &doc); err != nil {
		return nil, fmt.Errorf("values file %q: %s", f.Name, yamlProblem(err))
	}
	switch v := doc.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	default:
		return nil, fmt.Errorf("values file %q: top level is a %T, want a mapping of keys to values", f.Name, doc)
	}
}

// yamlProblem strips the layers sigs.k8s.io/yaml puts in front of the YAML
// parser's message, leaving "line N: <problem>".
func yamlProblem(err error) string {
	msg := err.Error()
	for _, p := range []string{"error converting YAML to JSON: ", "yaml: ", "unmarshal errors:\n"} {
		msg = strings.TrimPrefix(msg, p)
	}
	return strings.TrimSpace(msg)
}

// mergeMaps is Helm's values.mergeMaps: a deep merge of maps where b wins.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if v, ok := v.(map[string]any); ok {
			if bv, ok := out[k]; ok {
				if bv, ok := bv.(map[string]any); ok {
					out[k] = mergeMaps(bv, v)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}
