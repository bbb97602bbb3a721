package kube

import (
	"context"
	"fmt"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// OpenAPIFetchTimeout bounds OpenAPIV2 when ctx has no deadline.
const OpenAPIFetchTimeout = 30 * time.Second

const openAPIV2Proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

// OpenAPIV2 fetches the OpenAPI v2 document of the cluster behind d (/openapi/v2 as protobuf,
// as d.OpenAPISchema does, but honouring ctx). Fetching it takes about 100 ms, more with many
// CRDs: fetch it once per cluster and deploy.
func OpenAPIV2(ctx context.Context, d discovery.DiscoveryInterface) (*openapi_v2.Document, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, OpenAPIFetchTimeout)
		defer cancel()
	}
	var (
		doc *openapi_v2.Document
		err error
	)
	if rc := restClientOf(d); rc != nil {
		var raw []byte
		raw, err = rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", openAPIV2Proto).Do(ctx).Raw()
		if err == nil {
			doc = &openapi_v2.Document{}
			err = proto.Unmarshal(raw, doc)
		}
	} else {
		// Fakes have no REST client; their OpenAPISchema does no I/O.
		doc, err = d.OpenAPISchema()
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch cluster OpenAPI schema: %w", err)
	}
	return doc, nil
}

// restClientOf returns d's REST client, nil when it has none (fakes return a typed nil).
func restClientOf(d discovery.DiscoveryInterface) rest.Interface {
	rc := d.RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		return nil
	}
	return rc
}
