package resource

import (
	"fmt"
	"strings"
)

// Dependency is one werf.io/deploy-dependency-<id> annotation: the resource is deployed only
// after every resource of the release it matches is applied (StatePresent) or ready (StateReady).
// Empty target fields match anything; Kind, Group and Version match case-insensitively.
type Dependency struct {
	ID        string          `json:"id"`
	State     DependencyState `json:"state"`
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Kind      string          `json:"kind,omitempty"`
	Group     string          `json:"group,omitempty"`
	Version   string          `json:"version,omitempty"`
}

// Matches reports whether r is a target of d.
func (d Dependency) Matches(r *Resource) bool {
	return (d.Name == "" || d.Name == r.Key.Name) &&
		(d.Namespace == "" || d.Namespace == r.Key.Namespace) &&
		(d.Kind == "" || strings.EqualFold(d.Kind, r.Key.Kind)) &&
		(d.Group == "" || strings.EqualFold(d.Group, r.Key.Group)) &&
		(d.Version == "" || strings.EqualFold(d.Version, r.GroupVersionKind().Version))
}

// String is the annotation's value as werf writes it, e.g. "state=ready,kind=StatefulSet,name=db".
func (d Dependency) String() string {
	parts := []string{"state=" + string(d.State)}
	for _, p := range [][2]string{{"name", d.Name}, {"namespace", d.Namespace}, {"kind", d.Kind}, {"group", d.Group}, {"version", d.Version}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, ",")
}

// ExternalDependency is one <id>.external-dependency.werf.io/resource annotation (with its
// /namespace companion): an object outside the release that must exist and be ready before the
// resource is deployed. Type is the resource type as kubectl takes it ("deployments", "secret",
// "deploy"); mapping it to a kind needs the cluster's discovery, so it is left to the tracker.
type ExternalDependency struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Version   string `json:"version,omitempty"`
	Group     string `json:"group,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// String is "namespace/type[.version][.group]/name", e.g. "infra/deployments.v1.apps/db".
func (d ExternalDependency) String() string {
	t := d.Type
	if d.Version != "" {
		t += "." + d.Version
	}
	if d.Group != "" {
		t += "." + d.Group
	}
	if d.Namespace == "" {
		return t + "/" + d.Name
	}
	return d.Namespace + "/" + t + "/" + d.Name
}

// AutoDependency is a dependency sealane finds in a resource's spec, as werf does: a pod
// template using a ConfigMap, Secret, ServiceAccount or PersistentVolumeClaim, or a
// (Cluster)RoleBinding naming a Role, ClusterRole or ServiceAccount. The resource is applied
// after Target when Target is in the release; Via says where the reference is.
type AutoDependency struct {
	Target Key    `json:"target"`
	Via    string `json:"via"`
}

// String is "<target key> (<via>)".
func (a AutoDependency) String() string { return fmt.Sprintf("%s (%s)", a.Target, a.Via) }
