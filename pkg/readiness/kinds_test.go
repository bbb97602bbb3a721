package readiness

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestComputeKinds(t *testing.T) {
	tests := []struct {
		name string
		obj  string
		want Status
	}{
		// Service
		{"clusterip service", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: ClusterIP, ports: [{port: 80}]}
status: {loadBalancer: {}}
`, Status{State: Ready, Message: "exists"}},
		{"service without type is ClusterIP", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
`, Status{State: Ready, Message: "exists"}},
		{"headless service", `
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, ports: [{port: 5432}]}
`, Status{State: Ready, Message: "exists"}},
		{"nodeport service", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: NodePort, ports: [{port: 80, nodePort: 30080}]}
`, Status{State: Ready, Message: "exists"}},
		{"externalname service", `
apiVersion: v1
kind: Service
metadata: {name: ext}
spec: {type: ExternalName, externalName: db.example.com}
`, Status{State: Ready, Message: "exists"}},
		{"load balancer without address", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer, ports: [{port: 80}]}
status: {loadBalancer: {}}
`, Status{State: Waiting, Message: "no load-balancer controller has assigned an address yet (none may run in this cluster)"}},
		{"load balancer with an empty ingress list", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: []}}
`, Status{State: Waiting, Message: "no load-balancer controller has assigned an address yet (none may run in this cluster)"}},
		{"load balancer with ip", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: [{ip: 203.0.113.7, ipMode: VIP}]}}
`, Status{State: Ready, Message: "load balancer 203.0.113.7"}},
		{"load balancer with hostnames", `
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: [{hostname: a.elb.example.com}, {hostname: b.elb.example.com}]}}
`, Status{State: Ready, Message: "load balancer a.elb.example.com, b.elb.example.com"}},
		{"service in another group is generic", `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: hello, generation: 2}
status:
  observedGeneration: 2
  conditions:
  - {type: Ready, status: "False", reason: RevisionMissing, message: Configuration "hello" does not have any ready Revision.}
`, Status{State: Waiting, Message: `Ready=False (RevisionMissing): Configuration "hello" does not have any ready Revision.`}},
		// Ingress
		{"ingress without address", `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec: {ingressClassName: nginx}
status: {loadBalancer: {}}
`, Status{State: Waiting, Message: "waiting for an ingress address"}},
		{"ingress with address", `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec: {ingressClassName: nginx}
status: {loadBalancer: {ingress: [{ip: 198.51.100.2, ports: [{port: 443, protocol: TCP}]}]}}
`, Status{State: Ready, Message: "address 198.51.100.2"}},
		{"legacy extensions ingress", `
apiVersion: extensions/v1beta1
kind: Ingress
metadata: {name: web}
status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}
`, Status{State: Ready, Message: "address lb.example.com"}},
		{"legacy extensions ingress without address", `
apiVersion: extensions/v1beta1
kind: Ingress
metadata: {name: web}
`, Status{State: Waiting, Message: "waiting for an ingress address"}},
		// PersistentVolumeClaim
		{"pvc bound", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {volumeName: pvc-1234, storageClassName: fast}
status: {phase: Bound}
`, Status{State: Ready, Message: "bound to volume pvc-1234"}},
		{"pvc pending with storage class", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {storageClassName: fast}
status: {phase: Pending}
`, Status{State: Waiting, Message: "waiting for a volume of storage class fast to bind"}},
		{"pvc pending with beta storage class annotation", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, annotations: {volume.beta.kubernetes.io/storage-class: slow}}
status: {phase: Pending}
`, Status{State: Waiting, Message: "waiting for a volume of storage class slow to bind"}},
		{"pvc without status", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
`, Status{State: Waiting, Message: "waiting for a volume to bind"}},
		{"pvc lost", `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {volumeName: pv-9}
status: {phase: Lost}
`, Status{State: Failed, Message: "claim lost: volume pv-9 is gone"}},
		// CustomResourceDefinition
		{"crd established", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
status:
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts}
  - {type: Established, status: "True", reason: InitialNamesAccepted}
`, Status{State: Ready, Message: "established"}},
		{"crd not yet established", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
status:
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts}
  - {type: Established, status: "False", reason: Installing}
`, Status{State: Waiting, Message: "waiting for the definition to be established"}},
		{"crd without status", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
`, Status{State: Waiting, Message: "waiting for the definition to be established"}},
		{"crd names rejected", `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
status:
  conditions:
  - {type: NamesAccepted, status: "False", reason: ListKindConflict, message: '"WidgetList" is already in use'}
  - {type: Established, status: "False", reason: NotAccepted}
`, Status{State: Failed, Message: `names not accepted: ListKindConflict: "WidgetList" is already in use`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := compute(mustObj(t, tt.obj))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Compute (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIngressStatus(t *testing.T) {
	const noAddress = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec: {ingressClassName: nginx}
`
	const legacyAnnotation = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, annotations: {kubernetes.io/ingress.class: traefik}}
`
	const noClass = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
`
	const withAddress = `
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec: {ingressClassName: nginx}
status: {loadBalancer: {ingress: [{hostname: lb.example.com}]}}
`
	class := func(name string, isDefault bool) string {
		doc := "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: " + name + "\n"
		if isDefault {
			doc += "  annotations: {ingressclass.kubernetes.io/is-default-class: \"true\"}\n"
		}
		return doc + "spec: {controller: example.com/" + name + "}\n"
	}
	tests := []struct {
		name    string
		obj     string
		classes []string // nil: unknown
		known   bool
		want    Status
	}{
		{"classes unknown: wait for the address", noAddress, nil, false,
			Status{State: Waiting, Message: "waiting for an ingress address"}},
		{"class served: wait for the address", noAddress, []string{class("nginx", false)}, true,
			Status{State: Waiting, Message: "waiting for an ingress address"}},
		{"no class at all in the cluster", noAddress, []string{}, true,
			Status{State: Ready, Message: "no ingress controller for class nginx: not waiting for an address"}},
		{"named class missing", noAddress, []string{class("traefik", true)}, true,
			Status{State: Ready, Message: "no ingress controller for class nginx: not waiting for an address"}},
		{"legacy annotation served", legacyAnnotation, []string{class("nginx", true), class("traefik", false)}, true,
			Status{State: Waiting, Message: "waiting for an ingress address"}},
		{"legacy annotation not served", legacyAnnotation, []string{class("nginx", true)}, true,
			Status{State: Ready, Message: "no ingress controller for class traefik: not waiting for an address"}},
		{"no class named, default exists", noClass, []string{class("nginx", false), class("traefik", true)}, true,
			Status{State: Waiting, Message: "waiting for an ingress address"}},
		{"no class named, no default", noClass, []string{class("nginx", false)}, true,
			Status{State: Ready, Message: "no ingress controller for class (default): not waiting for an address"}},
		{"address wins over a missing class", withAddress, []string{}, true,
			Status{State: Ready, Message: "address lb.example.com"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var classes []*unstructured.Unstructured
			if tt.known {
				classes = []*unstructured.Unstructured{}
				for _, c := range tt.classes {
					classes = append(classes, mustObj(t, c))
				}
			}
			got := IngressStatus(mustObj(t, tt.obj), classes)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("IngressStatus (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(Status{State: Waiting, Message: "not found"}, IngressStatus(nil, nil)); diff != "" {
		t.Errorf("IngressStatus(nil) (-want +got):\n%s", diff)
	}
}

func TestReadyWhenApplied(t *testing.T) {
	tests := []struct {
		yaml string
		want bool
	}{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n", true},
		{"apiVersion: v1\nkind: Secret\nmetadata: {name: a}\n", true},
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: a}\n", true},
		{"apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {clusterIP: None}\n", true},
		{"apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {type: LoadBalancer}\n", false},
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n", false},
		{"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: a}\n", false},
		{"apiVersion: example.com/v1\nkind: ConfigMap\nmetadata: {name: a}\n", false}, // another group's ConfigMap
	}
	for _, tt := range tests {
		if got := ReadyWhenApplied(mustObj(t, tt.yaml)); got != tt.want {
			t.Errorf("ReadyWhenApplied(%s) = %v, want %v", tt.yaml, got, tt.want)
		}
	}
}
