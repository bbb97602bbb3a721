package e2e

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeployCRDsFirst deploys a chart whose crds/ defines the kind its templates use: the CRD
// is applied and waited for until established before the custom resource, in one deploy, and
// it stays when the release is dismissed (crds/ files belong to anyone, as in Helm).
func TestDeployCRDsFirst(t *testing.T) {
	ns := namespace(t)
	data := t.TempDir()
	ctx := context.Background()
	r := sealane(t, data, "deploy", "test/e2e/testdata/crds", "--release", "w", "--namespace", ns, "--set", "size=5", "--timeout", "2m")
	if r.code != 0 {
		t.Fatalf("deploy exit %d:\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "CustomResourceDefinition/widgets.e2e.sealane.dev") {
		t.Errorf("deploy output does not show the CRD being applied:\n%s", r.out)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "e2e.sealane.dev", Version: "v1", Resource: "widgets"}
	w, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "w-widget", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("custom resource: %v", err)
	}
	if size, _, _ := unstructuredInt(w.Object, "spec", "size"); size != 5 {
		t.Errorf("widget size %d, want 5", size)
	}
	if r := sealane(t, data, "dismiss", "w", "--namespace", ns, "--timeout", "2m"); r.code != 0 {
		t.Fatalf("dismiss exit %d:\n%s", r.code, r.out)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Get(ctx, "widgets.e2e.sealane.dev", metav1.GetOptions{}); err != nil {
		t.Errorf("the CRD from crds/ was deleted with the release: %v", err)
	}
}

func unstructuredInt(obj map[string]any, path ...string) (int64, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case int64:
		return v, true, nil
	case float64:
		return int64(v), true, nil
	}
	return 0, false, nil
}
