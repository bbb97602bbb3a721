package readiness

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// serviceStatus: a LoadBalancer Service is Ready once status.loadBalancer.ingress has an
// entry; every other type (ClusterIP, headless, NodePort, ExternalName) is Ready as it exists.
func serviceStatus(obj *unstructured.Unstructured) Status {
	if str(obj.Object, "spec", "type") != "LoadBalancer" {
		return Status{State: Ready, Message: "exists"}
	}
	if addr := lbAddresses(obj.Object); addr != "" {
		return Status{State: Ready, Message: "load balancer " + addr}
	}
	return Status{State: Waiting, Message: "no load-balancer controller has assigned an address yet (none may run in this cluster)"}
}

// lbAddresses joins the ip or hostname of every status.loadBalancer.ingress entry ("" when
// there is none); an entry with neither counts as "(no address)".
func lbAddresses(obj map[string]any) string {
	list := slice(obj, "status", "loadBalancer", "ingress")
	addrs := make([]string, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		switch ip, host := str(m, "ip"), str(m, "hostname"); {
		case ip != "":
			addrs = append(addrs, ip)
		case host != "":
			addrs = append(addrs, host)
		default:
			addrs = append(addrs, "(no address)")
		}
	}
	return Clip(strings.Join(addrs, ", "))
}

// Annotations that name an Ingress's class and the cluster's default IngressClass.
const (
	ingressClassAnnotation   = "kubernetes.io/ingress.class"
	defaultIngressAnnotation = "ingressclass.kubernetes.io/is-default-class"
)

// IngressStatus is the readiness of an Ingress: Ready once status.loadBalancer.ingress has an
// entry. classes are the cluster's IngressClass objects, nil when unknown: when known and none
// serves the Ingress (by spec.ingressClassName, the kubernetes.io/ingress.class annotation, or
// the default class when it names none), no controller will ever give it an address, so it is
// Ready without one.
func IngressStatus(obj *unstructured.Unstructured, classes []*unstructured.Unstructured) Status {
	if obj == nil {
		return Status{State: Waiting, Message: "not found"}
	}
	if addr := lbAddresses(obj.Object); addr != "" {
		return Status{State: Ready, Message: "address " + addr}
	}
	if classes != nil {
		if name, ok := ingressClassServed(obj, classes); !ok {
			return Status{State: Ready, Message: "no ingress controller for class " + name + ": not waiting for an address"}
		}
	}
	return Status{State: Waiting, Message: "waiting for an ingress address"}
}

// ingressClassServed returns the class the Ingress asks for (`(default)` when it names none)
// and whether one of classes is that class.
func ingressClassServed(obj *unstructured.Unstructured, classes []*unstructured.Unstructured) (string, bool) {
	name := str(obj.Object, "spec", "ingressClassName")
	if name == "" {
		name = obj.GetAnnotations()[ingressClassAnnotation]
	}
	for _, c := range classes {
		if c == nil {
			continue
		}
		if name != "" && c.GetName() == name {
			return name, true
		}
		if name == "" && strings.EqualFold(c.GetAnnotations()[defaultIngressAnnotation], "true") {
			return c.GetName(), true
		}
	}
	if name == "" {
		name = "(default)"
	}
	return name, false
}

// pvcStatus: Ready when the claim is Bound, Failed when Lost (its volume is gone), Waiting
// otherwise, naming the storage class the claim waits on.
func pvcStatus(obj *unstructured.Unstructured) Status {
	o := obj.Object
	volume := str(o, "spec", "volumeName")
	switch phase := str(o, "status", "phase"); phase {
	case "Bound":
		return Status{State: Ready, Message: "bound to volume " + volume}
	case "Lost":
		return Status{State: Failed, Message: "claim lost: volume " + volume + " is gone"}
	}
	class := str(o, "spec", "storageClassName")
	if class == "" {
		class = obj.GetAnnotations()["volume.beta.kubernetes.io/storage-class"]
	}
	if class == "" {
		return Status{State: Waiting, Message: "waiting for a volume to bind"}
	}
	return Status{State: Waiting, Message: "waiting for a volume of storage class " + class + " to bind"}
}

// crdStatus: Ready when Established; Failed when the API server rejects its names
// (NamesAccepted=False, e.g. a plural already taken); Waiting otherwise.
func crdStatus(obj *unstructured.Unstructured) Status {
	o := obj.Object
	if c, ok := findCondition(o, "NamesAccepted"); ok && c.Status == "False" {
		return Status{State: Failed, Message: reasonDetail("names not accepted", c.Reason, c.Message)}
	}
	if _, ok := conditionTrue(o, "Established"); ok {
		return Status{State: Ready, Message: "established"}
	}
	return Status{State: Waiting, Message: "waiting for the definition to be established"}
}

// readyWhenApplied are the kinds whose readiness is their existence and nothing else: no
// status, no controller acting on them (a Service, unless of type LoadBalancer, too).
var readyWhenApplied = map[string]bool{
	"/ConfigMap": true, "/Secret": true, "/ServiceAccount": true, "/LimitRange": true,
	"rbac.authorization.k8s.io/Role": true, "rbac.authorization.k8s.io/RoleBinding": true,
	"rbac.authorization.k8s.io/ClusterRole": true, "rbac.authorization.k8s.io/ClusterRoleBinding": true,
	"networking.k8s.io/NetworkPolicy": true, "scheduling.k8s.io/PriorityClass": true,
}

// ReadyWhenApplied reports whether obj is ready as soon as a write of it succeeded: its kind
// is judged Ready because it exists (a ConfigMap, a Secret, RBAC objects, a Service of any type
// but LoadBalancer...). Tracking such an object would only confirm what the apply said.
func ReadyWhenApplied(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	if gvk.Group == "" && gvk.Kind == "Service" {
		return str(obj.Object, "spec", "type") != "LoadBalancer"
	}
	return readyWhenApplied[gvk.Group+"/"+gvk.Kind]
}
