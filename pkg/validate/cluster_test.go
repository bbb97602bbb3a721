package validate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

// TestClusterSchemaSandbox loads the schema of the sandbox cluster (make sandbox-up, or
// SEALANE_KUBECONFIG), with a CRD installed for the test, and checks that built-in kinds and
// the custom resource are both validated against it.
func TestClusterSchemaSandbox(t *testing.T) {
	c := kubetest.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var suffix [4]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		t.Fatal(err)
	}
	group := "validate-" + hex.EncodeToString(suffix[:]) + ".sealane.dev"
	crdObjs, err := manifest.Parse(fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.%[1]s
  labels: {%[2]s: "true"}
spec:
  group: %[1]s
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer}
              color: {type: string}
`, group, kubetest.TestLabel))
	if err != nil {
		t.Fatal(err)
	}
	crd := crdObjs[0].Obj
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dyn.Resource(crdGVR).Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD: %v", err)
		}
	})

	// The apiserver publishes a new CRD's schema in /openapi/v2 a moment after creating it.
	gadget := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}
	var s *Schema
	for {
		doc, err := kube.OpenAPIV2(ctx, c.Typed.Discovery())
		if err != nil {
			t.Fatalf("OpenAPIV2: %v", err)
		}
		if s, err = FromDocument(doc, "the cluster's schema"); err != nil {
			t.Fatalf("FromDocument: %v", err)
		}
		if s.Knows(gadget) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%v never appeared in the cluster's OpenAPI schema", gadget)
		case <-time.After(500 * time.Millisecond):
		}
	}

	rendered := fmt.Sprintf(`---
# Source: demo/templates/gadget.yaml
apiVersion: %s/v1
kind: Gadget
metadata: {name: g}
spec:
  colour: red
---
# Source: demo/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx
        redinessProbe: {}
`, group)
	_, res := Manifest(rendered, Options{Schema: s})
	var got []string
	for _, w := range res.All() {
		got = append(got, fmt.Sprintf("%s %s %s", w.Code, w.Object.Kind, w.Field))
	}
	want := []string{
		"MissingRequiredField Gadget spec.size", // on the line of spec, before colour
		"UnknownField Gadget spec.colour",
		"UnknownField Deployment spec.template.spec.containers[0].redinessProbe",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("issues:\n%s\nwant:\n%s\n(all: %v)", strings.Join(got, "\n"), strings.Join(want, "\n"), res.All())
	}
	if len(res.Unchecked) != 0 {
		t.Errorf("Unchecked = %v, want none: the cluster has every kind", res.Unchecked)
	}
}
