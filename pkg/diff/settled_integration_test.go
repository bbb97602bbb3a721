package diff_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/kube/kubetest"
)

// Unsettled finds nothing to ask about right after an apply (the live objects hold every field
// the chart sets, read with one List per kind), and names exactly the objects edited by hand
// or missing since.
func TestUnsettledAfterApply(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, c)
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, labels: {app: demo}}\ndata: {value: %q}\n", i, fmt.Sprint(i))
	}
	b.WriteString("---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\nstringData: {token: s3cret}\n")
	b.WriteString("---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n" +
		"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" +
		"    spec: {containers: [{name: web, image: example.com/web:1, ports: [{containerPort: 8080}]}]}\n")
	objs := parse(t, b.String())
	apply.WithReleaseMetadata(objs, "demo", ns)
	if _, err := apply.Apply(ctx(t), c, objs, apply.Options{DefaultNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	opts := diff.Options{DefaultNamespace: ns}
	left, err := diff.Unsettled(ctx(t), c, objs, opts)
	if err != nil || len(left) != 0 {
		t.Fatalf("right after the apply: unsettled %d objects (%v); want none", len(left), err)
	}

	// Drift: a hand edit of a chart field, a deleted object. Another manager's extra field is none.
	cms := c.Typed.CoreV1().ConfigMaps(ns)
	if _, err := cms.Patch(ctx(t), "cm-3", types.MergePatchType, []byte(`{"data":{"value":"edited"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(ctx(t), "cm-4", types.MergePatchType, []byte(`{"data":{"extra":"theirs"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx(t), "cm-5", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	left, err = diff.Unsettled(ctx(t), c, objs, opts)
	if err != nil {
		t.Fatal(err)
	}

	var names []string
	for _, o := range left {
		names = append(names, o.Obj.GetName())
	}
	if strings.Join(names, ",") != "cm-3,cm-5" {
		t.Errorf("unsettled after drift: %v; want cm-3 (edited) and cm-5 (deleted)", names)
	}
}
