package admission

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sealane/sealane/events"
)

// Scope bounds what a tenant's deploys may do: the clusters and namespaces they target and
// write in, the cluster-scoped kinds the operator grants, and the Kubernetes ServiceAccount
// the stages impersonate for them, so that the cluster's RBAC has the last word. A client
// without a scope (the plain "name: key" form of the client keys file) is an operator client:
// its deploys are not bounded.
type Scope struct {
	// Clusters are the clusters the client may deploy to, as names or globs ("prod-*"); empty:
	// every cluster.
	Clusters []string `json:"clusters,omitempty"`
	// Namespaces are the namespaces the client's releases live in and its objects are written
	// to, as names or globs ("team-a-*"); at least one.
	Namespaces []string `json:"namespaces"`
	// ClusterScoped are the cluster-scoped kinds the operator grants, as "Kind" for the core
	// group or "Kind.group" ("ClusterRole.rbac.authorization.k8s.io"), or "*" for every one;
	// empty: none.
	ClusterScoped []string `json:"clusterScoped,omitempty"`
	// ServiceAccount is "namespace/name" of the ServiceAccount the client's deploys write and
	// `lookup` reads as.
	ServiceAccount string `json:"serviceAccount"`
}

// globName is a name or a glob of one: what Kubernetes names hold, plus '*' and '?'.
var globName = regexp.MustCompile(`^[a-z0-9*?]([a-z0-9.*?-]{0,251}[a-z0-9*?])?$`)

// kindName is "Kind" or "Kind.group".
var kindName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[a-z0-9]([a-z0-9.-]*[a-z0-9])?)?$`)

// validate says what is wrong with a scope, in the words of the client keys file.
func (s *Scope) validate() error {
	if len(s.Namespaces) == 0 {
		return fmt.Errorf("a scoped client needs namespaces (the namespaces it may deploy into, e.g. [team-a]); " +
			"give only keys for an operator client without bounds")
	}
	for _, list := range []struct {
		field string
		names []string
	}{{"namespaces", s.Namespaces}, {"clusters", s.Clusters}} {
		for _, n := range list.names {
			if _, err := path.Match(n, ""); err != nil || !globName.MatchString(n) {
				return fmt.Errorf("%s: %q is neither a name nor a glob of names (lowercase letters, digits, '-', '.', '*', '?')", list.field, n)
			}
		}
	}
	for _, k := range s.ClusterScoped {
		if k != "*" && !kindName.MatchString(k) {
			return fmt.Errorf("clusterScoped: %q is not a kind: want Kind for the core group, Kind.group (e.g. ClusterRole.rbac.authorization.k8s.io) or *", k)
		}
	}
	ns, name, ok := strings.Cut(s.ServiceAccount, "/")
	if s.ServiceAccount == "" {
		return fmt.Errorf("a scoped client needs serviceAccount: namespace/name of the ServiceAccount its deploys run as " +
			"(the cluster's RBAC for it is the last word on what they write)")
	}
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return fmt.Errorf("serviceAccount %q: want namespace/name of a ServiceAccount, e.g. team-a/sealane-deployer", s.ServiceAccount)
	}
	return nil
}

// matchAny says whether name matches one of the names or globs.
func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// AllowsCluster says whether the client may deploy to cluster name.
func (s *Scope) AllowsCluster(name string) bool {
	return len(s.Clusters) == 0 || matchAny(s.Clusters, name)
}

// AllowsNamespace says whether the client may deploy into, and write objects in, namespace ns.
func (s *Scope) AllowsNamespace(ns string) bool { return matchAny(s.Namespaces, ns) }

// AllowsClusterKind says whether the operator granted the client cluster-scoped objects of
// kind in group ("" for the core group).
func (s *Scope) AllowsClusterKind(group, kind string) bool {
	want := kind
	if group != "" {
		want += "." + group
	}
	for _, k := range s.ClusterScoped {
		if k == "*" || k == want {
			return true
		}
	}
	return false
}

// ServiceAccountUser is the Kubernetes user name of the scope's ServiceAccount, the one the
// stages impersonate: "system:serviceaccount:<namespace>:<name>".
func (s *Scope) ServiceAccountUser() string {
	ns, name, _ := strings.Cut(s.ServiceAccount, "/")
	return "system:serviceaccount:" + ns + ":" + name
}

// String sums the scope up for messages.
func (s *Scope) String() string {
	granted := "none"
	if len(s.ClusterScoped) > 0 {
		granted = strings.Join(s.ClusterScoped, ", ")
	}
	clusters := "any"
	if len(s.Clusters) > 0 {
		clusters = strings.Join(s.Clusters, ", ")
	}
	return fmt.Sprintf("namespaces %s; clusters %s; cluster-scoped kinds %s; runs as ServiceAccount %s",
		strings.Join(s.Namespaces, ", "), clusters, granted, s.ServiceAccount)
}

// CheckRequest refuses a request of client outside its scope s: a cluster or a namespace the
// scope does not name, release records in another namespace, an uninstall that deletes the
// namespace (a cluster-scoped write) unless Namespace is granted. A nil scope (an operator
// client) refuses nothing. The error is the reason a failed deploy carries.
func (s *Scope) CheckRequest(client string, req events.RequestedData) error {
	if s == nil {
		return nil
	}
	t := req.Target
	grant := fmt.Sprintf("ask the operator to grant it in client %s's scope (the renderer's --client-keys file)", client)
	switch {
	case !s.AllowsCluster(t.Cluster):
		return fmt.Errorf("client %s may not deploy to cluster %s (its scope: clusters %s); %s",
			client, t.Cluster, strings.Join(s.Clusters, ", "), grant)
	case !s.AllowsNamespace(t.Namespace):
		return fmt.Errorf("client %s may not deploy into namespace %s (its scope: namespaces %s); deploy into one of them, or %s",
			client, t.Namespace, strings.Join(s.Namespaces, ", "), grant)
	case req.ReleaseStorage.Namespace != "" && !s.AllowsNamespace(req.ReleaseStorage.Namespace):
		return fmt.Errorf("client %s may not keep release records in namespace %s (its scope: namespaces %s); "+
			"drop --release-storage-namespace, or %s", client, req.ReleaseStorage.Namespace, strings.Join(s.Namespaces, ", "), grant)
	case req.Operation == events.OperationUninstall && req.WithNamespace && !s.AllowsClusterKind("", "Namespace"):
		return fmt.Errorf("client %s may not delete namespace %s (a cluster-scoped Namespace; its scope grants %s); "+
			"uninstall without --with-namespace, or %s", client, t.Namespace, grantedKinds(s), grant)
	}
	return nil
}

// grantedKinds lists the cluster-scoped kinds s grants, "no cluster-scoped kind" for none.
func grantedKinds(s *Scope) string {
	if len(s.ClusterScoped) == 0 {
		return "no cluster-scoped kind"
	}
	return "cluster-scoped kinds " + strings.Join(s.ClusterScoped, ", ")
}
