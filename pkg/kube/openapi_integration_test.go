package kube_test

import (
	"context"
	"testing"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
)

// TestOpenAPIV2IfChanged: the sandbox's API server names its document with an ETag and
// answers "not modified", without the document, when asked with it among others; asked with
// other ETags only it sends the document. Other tests add CRDs to the sandbox meanwhile, which
// changes the document (and its ETag): a round that meets such a change starts again, while
// the document sent again under the same ETag fails the test.
func TestOpenAPIV2IfChanged(t *testing.T) {
	d := kubetest.Cluster(t).Typed.Discovery()
	ctx := context.Background()
	for round := 1; ; round++ {
		raw, etag, err := kube.OpenAPIV2IfChanged(ctx, d, nil)
		if err != nil || len(raw) < 1<<10 || etag == "" {
			t.Fatalf("full fetch: %d bytes, ETag %q, %v", len(raw), etag, err)
		}
		other, etag2, err := kube.OpenAPIV2IfChanged(ctx, d, []string{`"0123"`})
		if err != nil || other == nil || etag2 == "" {
			t.Fatalf("with another ETag: %d bytes, ETag %q, %v; want the document", len(other), etag2, err)
		}
		again, matched, err := kube.OpenAPIV2IfChanged(ctx, d, []string{`"0123"`, etag2})
		switch {
		case err != nil:
			t.Fatal(err)
		case again == nil && matched == etag2:
			return // not modified
		case again != nil && matched == etag2:
			t.Fatalf("asked with its ETag %s the server sent the document again (%d bytes)", etag2, len(again))
		case round == 5:
			t.Fatalf("the document changed in each of 5 rounds (ETags %s, %s, %s)", etag, etag2, matched)
		}
		t.Logf("round %d: the document changed meanwhile (a CRD added by another test): again", round)
	}
}
