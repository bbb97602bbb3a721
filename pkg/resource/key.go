package resource

import (
	"fmt"
	"strings"

	"github.com/sealane/sealane/pkg/manifest"
)

// Key is the identity of an object in a release: API group, kind, namespace and name (the
// version does not matter, as for Helm). Namespace is empty for cluster-scoped objects.
type Key struct {
	Group     string
	Kind      string
	Namespace string
	Name      string
}

// KeyOf returns the key of ref.
func KeyOf(ref manifest.Ref) Key {
	return Key{Group: ref.GroupVersionKind().Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// String is "namespace/Kind.group/name", with ".group" left out for the core group and
// "namespace/" for cluster-scoped objects, e.g. "shop/Deployment.apps/web", "shop/ConfigMap/cfg",
// "ClusterRole.rbac.authorization.k8s.io/reader".
func (k Key) String() string {
	var b strings.Builder
	if k.Namespace != "" {
		b.WriteString(k.Namespace)
		b.WriteByte('/')
	}
	b.WriteString(k.Kind)
	if k.Group != "" {
		b.WriteByte('.')
		b.WriteString(k.Group)
	}
	b.WriteByte('/')
	b.WriteString(k.Name)
	return b.String()
}

// MarshalText writes String, so keys are strings in JSON.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads the form String writes.
func (k *Key) UnmarshalText(text []byte) error {
	parts := strings.Split(string(text), "/")
	var ns, kg, name string
	switch len(parts) {
	case 2:
		kg, name = parts[0], parts[1]
	case 3:
		ns, kg, name = parts[0], parts[1], parts[2]
	default:
		return fmt.Errorf("resource key %q: want [namespace/]Kind[.group]/name", text)
	}
	kind, group, _ := strings.Cut(kg, ".")
	if kind == "" || name == "" {
		return fmt.Errorf("resource key %q: want [namespace/]Kind[.group]/name", text)
	}
	*k = Key{Group: group, Kind: kind, Namespace: ns, Name: name}
	return nil
}
