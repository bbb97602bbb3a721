package apply

import (
	"testing"

	"github.com/sealane/sealane/pkg/manifest"
)

func TestPreviousIndex(t *testing.T) {
	prev, err := manifest.Parse(`apiVersion: apps/v1beta2
kind: Deployment
metadata: {name: web}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: other}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
`)
	if err != nil {
		t.Fatal(err)
	}
	idx := indexPrevious(prev, "shop")
	tests := []struct {
		name, apiVersion, kind, namespace, objName string
		wantFrom                                   string // apiVersion/namespace of the match, "" for none
	}{
		{"default namespace, older version", "apps/v1", "Deployment", "shop", "web", "apps/v1beta2/shop"},
		{"explicit namespace", "apps/v1", "Deployment", "other", "web", "apps/v1/other"},
		{"other namespace", "apps/v1", "Deployment", "third", "web", ""},
		{"other group", "example.com/v1", "Deployment", "shop", "web", ""},
		{"cluster-scoped", "rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader", "rbac.authorization.k8s.io/v1/shop"},
		{"new object", "v1", "ConfigMap", "shop", "web", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := withAnnotations(nil)
			o.SetAPIVersion(tt.apiVersion)
			o.SetKind(tt.kind)
			o.SetNamespace(tt.namespace)
			o.SetName(tt.objName)
			got := ""
			if p := idx.lookup(o); p != nil {
				got = p.GetAPIVersion() + "/" + p.GetNamespace()
			}
			if got != tt.wantFrom {
				t.Errorf("lookup = %q, want %q", got, tt.wantFrom)
			}
		})
	}
}
