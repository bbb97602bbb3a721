package resource

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// builtinClusterScoped are the cluster-scoped kinds of Kubernetes' own API groups.
var builtinClusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}:        true,
	{Kind: "Node"}:             true,
	{Kind: "PersistentVolume"}: true,
	{Kind: "ComponentStatus"}:  true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "policy", Kind: "PodSecurityPolicy"}:                                      true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
}

// BuiltinClusterScoped reports whether gk is a cluster-scoped kind of Kubernetes itself
// (Namespace, ClusterRole, CustomResourceDefinition, StorageClass, ...).
func BuiltinClusterScoped(gk schema.GroupKind) bool { return builtinClusterScoped[gk] }

// Scopes knows which kinds are cluster-scoped: Kubernetes' own, those of the CRDs it was given,
// and those an optional fallback (a cluster's REST mapping) reports. Kinds it does not know are
// namespaced. The zero Scopes knows the built-in kinds only.
type Scopes struct {
	crds map[schema.GroupKind]bool
	// Fallback, when set, is asked about kinds neither built in nor defined by a known CRD.
	Fallback func(schema.GroupKind) bool
}

// AddCRD records the scope of the kind a CustomResourceDefinition defines; other objects are
// ignored.
func (s *Scopes) AddCRD(obj *unstructured.Unstructured) {
	if obj.GetKind() != "CustomResourceDefinition" {
		return
	}
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
	if kind == "" {
		return
	}
	if s.crds == nil {
		s.crds = map[schema.GroupKind]bool{}
	}
	s.crds[schema.GroupKind{Group: group, Kind: kind}] = scope == "Cluster"
}

// ClusterScoped reports whether objects of gk are cluster-scoped.
func (s *Scopes) ClusterScoped(gk schema.GroupKind) bool {
	if builtinClusterScoped[gk] {
		return true
	}
	if s == nil {
		return false
	}
	if cluster, ok := s.crds[gk]; ok {
		return cluster
	}
	return s.Fallback != nil && s.Fallback(gk)
}
