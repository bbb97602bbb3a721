package apply

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
)

func obj(kind, name string) manifest.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind(kind)
	u.SetName(name)
	return manifest.Object{Obj: u, Source: "templates/" + name + ".yaml"}
}

func TestKindOrder(t *testing.T) {
	tests := []struct {
		kind string
		want int
	}{
		{"PriorityClass", 0},
		{"Namespace", 1},
		{"ConfigMap", 10},
		{"CustomResourceDefinition", 14},
		{"Service", 23},
		{"Deployment", 28},
		{"APIService", 35},
		{"MutatingWebhookConfiguration", 36},
		{"ValidatingWebhookConfiguration", 37},
		{"Certificate", UnknownKindOrder},
		{"", UnknownKindOrder},
		{"deployment", UnknownKindOrder}, // kinds are case-sensitive, as in Helm
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			if got := KindOrder(tt.kind); got != tt.want {
				t.Errorf("KindOrder(%q) = %d, want %d", tt.kind, got, tt.want)
			}
		})
	}
}

func TestSortForInstall(t *testing.T) {
	tests := []struct {
		name string
		in   []manifest.Object
		want []string // kind/name
	}{
		{
			name: "empty",
			want: []string{},
		},
		{
			name: "helm install order",
			in: []manifest.Object{
				obj("Ingress", "ing"), obj("Deployment", "web"), obj("Service", "web"), obj("ConfigMap", "cfg"),
				obj("Secret", "sec"), obj("ServiceAccount", "sa"), obj("Namespace", "ns"), obj("Job", "migrate"),
				obj("CustomResourceDefinition", "crd"), obj("RoleBinding", "rb"), obj("Role", "r"),
				obj("ClusterRole", "cr"), obj("StatefulSet", "db"), obj("HorizontalPodAutoscaler", "hpa"),
				obj("PriorityClass", "pc"), obj("ValidatingWebhookConfiguration", "vwc"),
			},
			want: []string{
				"PriorityClass/pc", "Namespace/ns", "ServiceAccount/sa", "Secret/sec", "ConfigMap/cfg",
				"CustomResourceDefinition/crd", "ClusterRole/cr", "Role/r", "RoleBinding/rb", "Service/web",
				"Deployment/web", "HorizontalPodAutoscaler/hpa", "StatefulSet/db", "Job/migrate", "Ingress/ing",
				"ValidatingWebhookConfiguration/vwc",
			},
		},
		{
			name: "unknown kinds last, alphabetically by kind",
			in: []manifest.Object{
				obj("Widget", "w1"), obj("Certificate", "c1"), obj("ConfigMap", "cfg"), obj("Alpha", "a"), obj("Widget", "w0"),
			},
			want: []string{"ConfigMap/cfg", "Alpha/a", "Certificate/c1", "Widget/w1", "Widget/w0"},
		},
		{
			name: "stable within a kind",
			in: []manifest.Object{
				obj("ConfigMap", "z"), obj("Deployment", "b"), obj("ConfigMap", "a"), obj("Deployment", "a"), obj("ConfigMap", "m"),
			},
			want: []string{"ConfigMap/z", "ConfigMap/a", "ConfigMap/m", "Deployment/b", "Deployment/a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SortForInstall(tt.in)
			got := make([]string, 0, len(tt.in))
			for _, o := range tt.in {
				got = append(got, o.Obj.GetKind()+"/"+o.Obj.GetName())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}
