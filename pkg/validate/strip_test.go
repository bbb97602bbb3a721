package validate

import (
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestStripDocumentKeepsWhatValidationReads strips a document and checks that descriptions
// and other extensions are gone, the kind's group-version-kind is kept, and the schema built
// from it still finds a wrongly typed field.
func TestStripDocumentKeepsWhatValidationReads(t *testing.T) {
	size := &openapi_v2.Schema{Type: &openapi_v2.TypeItem{Value: []string{"integer"}}, Description: "how big"}
	doc := &openapi_v2.Document{Swagger: "2.0", Paths: &openapi_v2.Paths{Path: []*openapi_v2.NamedPathItem{{Name: "/apis"}}},
		Definitions: &openapi_v2.Definitions{AdditionalProperties: []*openapi_v2.NamedSchema{{Name: "io.example.v1.Widget",
			Value: &openapi_v2.Schema{Type: &openapi_v2.TypeItem{Value: []string{"object"}}, Description: "a widget",
				Properties: &openapi_v2.Properties{AdditionalProperties: []*openapi_v2.NamedSchema{{Name: "size", Value: size}}},
				VendorExtension: []*openapi_v2.NamedAny{
					{Name: gvkExtension, Value: &openapi_v2.Any{Yaml: "- {group: example.io, version: v1, kind: Widget}\n"}},
					{Name: "x-kubernetes-list-type", Value: &openapi_v2.Any{Yaml: "atomic\n"}}}}}}}}
	s, err := FromDocument(doc, "the test's schema")
	if err != nil {
		t.Fatal(err)
	}
	widget := doc.GetDefinitions().GetAdditionalProperties()[0].GetValue()
	if widget.Description != "" || size.Description != "" || len(doc.GetPaths().GetPath()) != 0 {
		t.Error("descriptions or paths left in the document")
	}
	if len(widget.VendorExtension) != 1 || widget.VendorExtension[0].GetName() != gvkExtension {
		t.Errorf("extensions %v, want the group-version-kind only", widget.VendorExtension)
	}
	gvk := schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}
	if !s.Knows(gvk) {
		t.Fatal("the schema lost the kind")
	}
	_, res := Manifest("apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w}\nsize: big\n", Options{Schema: s.WithSource("cluster a")})
	found := false
	for _, is := range res.All() {
		found = found || is.Code == CodeInvalidType && is.Field == "size"
	}
	if !found {
		t.Errorf("issues %v, want an invalid type of size", res.All())
	}
}

func TestWithSourceSharesKinds(t *testing.T) {
	s, err := Bundled()
	if err != nil {
		t.Fatal(err)
	}
	named := s.WithSource("the schema of cluster a")
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	if named.Source() != "the schema of cluster a" || s.Source() == named.Source() || !named.Knows(deployment) {
		t.Errorf("WithSource: %q (was %q), knows Deployment %v", named.Source(), s.Source(), named.Knows(deployment))
	}
	if (*Schema)(nil).WithSource("x") != nil {
		t.Error("a nil schema named is not nil")
	}
}
