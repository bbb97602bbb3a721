package resource

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sealane/sealane/pkg/manifest"
)

func kindObject(kind, name string) manifest.Object {
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
				kindObject("Ingress", "ing"), kindObject("Deployment", "web"), kindObject("Service", "web"), kindObject("ConfigMap", "cfg"),
				kindObject("Secret", "sec"), kindObject("ServiceAccount", "sa"), kindObject("Namespace", "ns"), kindObject("Job", "migrate"),
				kindObject("CustomResourceDefinition", "crd"), kindObject("RoleBinding", "rb"), kindObject("Role", "r"),
				kindObject("ClusterRole", "cr"), kindObject("StatefulSet", "db"), kindObject("HorizontalPodAutoscaler", "hpa"),
				kindObject("PriorityClass", "pc"), kindObject("ValidatingWebhookConfiguration", "vwc"),
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
				kindObject("Widget", "w1"), kindObject("Certificate", "c1"), kindObject("ConfigMap", "cfg"), kindObject("Alpha", "a"), kindObject("Widget", "w0"),
			},
			want: []string{"ConfigMap/cfg", "Alpha/a", "Certificate/c1", "Widget/w1", "Widget/w0"},
		},
		{
			name: "stable within a kind",
			in: []manifest.Object{
				kindObject("ConfigMap", "z"), kindObject("Deployment", "b"), kindObject("ConfigMap", "a"), kindObject("Deployment", "a"), kindObject("ConfigMap", "m"),
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
