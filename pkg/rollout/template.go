package rollout

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ErrTemplate is wrapped by a release or namespace template that cannot be rendered for a cluster.
var ErrTemplate = errors.New("template")

// clusterData is what a release or namespace template sees of a cluster.
type clusterData struct {
	Cluster string
	Labels  map[string]string
}

// releaseRe is what Helm accepts as a release name.
var releaseRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

const maxReleaseLen = 53

// nameKind is what a templated field names: a release or a namespace.
type nameKind string

const (
	kindRelease   nameKind = "release"
	kindNamespace nameKind = "namespace"
)

// checkName reports a release or namespace name Kubernetes or Helm would refuse.
func checkName(kind nameKind, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the %s is empty", kind)
	case kind == kindRelease && (len(name) > maxReleaseLen || !releaseRe.MatchString(name)):
		return fmt.Errorf("%q is not a valid release name: use lower-case letters, digits, '-' and '.' (at most %d characters)", name, maxReleaseLen)
	case kind == kindNamespace && len(validation.IsDNS1123Label(name)) > 0:
		return fmt.Errorf("%q is not a valid namespace name: %s", name, strings.Join(validation.IsDNS1123Label(name), "; "))
	}
	return nil
}

// checkTemplate reports a release or namespace that is neither a valid name nor a template
// that parses and uses only .Cluster and .Labels.
func checkTemplate(kind nameKind, text string) error {
	if !strings.Contains(text, "{{") {
		return checkName(kind, text)
	}
	t, err := template.New(string(kind)).Parse(text)
	if err != nil {
		return fmt.Errorf("template %q: %w", text, err)
	}
	if err := t.Execute(&strings.Builder{}, clusterData{Cluster: "c", Labels: map[string]string{}}); err != nil {
		return fmt.Errorf("template %q: %w (the fields are .Cluster and .Labels.KEY)", text, err)
	}
	return nil
}

// render renders a release or namespace template for a cluster; a label the cluster lacks is
// an error, as is a result that is not a valid name.
func render(kind nameKind, text string, c clusterData) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := template.New(string(kind)).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrTemplate, text, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, c); err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrTemplate, text, err)
	}
	if err := checkName(kind, b.String()); err != nil {
		return "", fmt.Errorf("%w %q: %w", ErrTemplate, text, err)
	}
	return b.String(), nil
}
