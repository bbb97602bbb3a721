package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
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
	raw, err := OpenAPIV2Raw(ctx, d)
	if err != nil {
		return nil, err
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(raw, doc); err != nil {
		return nil, fmt.Errorf("decode cluster OpenAPI schema: %w", err)
	}
	return doc, nil
}

// OpenAPIV2Raw is OpenAPIV2 without decoding: the document as protobuf, which a caller that
// already has the schema of identical bytes need not decode at all.
func OpenAPIV2Raw(ctx context.Context, d discovery.DiscoveryInterface) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, OpenAPIFetchTimeout)
		defer cancel()
	}
	var (
		raw []byte
		err error
	)
	if rc := restClientOf(d); rc != nil {
		raw, err = rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", openAPIV2Proto).Do(ctx).Raw()
	} else {
		// Fakes have no REST client; their OpenAPISchema does no I/O.
		var doc *openapi_v2.Document
		if doc, err = d.OpenAPISchema(); err == nil {
			raw, err = proto.MarshalOptions{Deterministic: true}.Marshal(doc)
		}
	}
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch cluster OpenAPI schema: %w", err)
	}
	return raw, nil
}

// restClientOf returns d's REST client, nil when it has none (fakes return a typed nil).
func restClientOf(d discovery.DiscoveryInterface) rest.Interface {
	rc := d.RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		return nil
	}
	return rc
}

// OpenAPIV2IfChanged is OpenAPIV2Raw asking the server to answer "not modified" when its
// document is one of those etags name (If-None-Match): the API server's ETag is a hash of the
// document, equal on clusters serving the same one, so a fleet's documents are downloaded once
// each. It returns the document and its ETag, or no document and the ETag that matched. A
// discovery client without a REST client (a fake) is asked in full.
func OpenAPIV2IfChanged(ctx context.Context, d discovery.DiscoveryInterface, etags []string) ([]byte, string, error) {
	rc, ok := restClientOf(d).(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		raw, err := OpenAPIV2Raw(ctx, d)
		return raw, "", err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, OpenAPIFetchTimeout)
		defer cancel()
	}
	got, err := getIfChanged(ctx, rc, document{"/openapi/v2", openAPIV2Proto, maxOpenAPIBytes}, etags)
	if err != nil {
		return nil, "", fmt.Errorf("fetch cluster OpenAPI schema: %w", err)
	}
	return got.raw, got.etag, nil
}

// fetched is a document as getIfChanged fetched it: nil raw when not modified.
type fetched struct {
	raw               []byte
	etag, contentType string
}

// document is a document an API server serves: its path, the media types asked for, and the
// most bytes it may have.
type document struct {
	path, accept string
	maxBytes     int
}

// getIfChanged GETs doc from rc's server, asking it to answer "not modified" when its
// document is one of those etags name (If-None-Match). A "not modified" must name one of them.
func getIfChanged(ctx context.Context, rc *rest.RESTClient, doc document, etags []string) (fetched, error) {
	path, maxBytes := doc.path, doc.maxBytes
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rc.Get().AbsPath(path).URL().String(), nil)
	if err != nil {
		return fetched{}, err
	}
	req.Header.Set("Accept", doc.accept)
	if len(etags) > 0 {
		req.Header.Set("If-None-Match", strings.Join(etags, ", "))
	}
	resp, err := rc.Client.Do(req)
	if err != nil {
		return fetched{}, err
	}
	defer resp.Body.Close()
	got := fetched{etag: resp.Header.Get("Etag"), contentType: resp.Header.Get("Content-Type")}
	switch resp.StatusCode {
	case http.StatusNotModified:
		if !slices.Contains(etags, got.etag) {
			return fetched{}, fmt.Errorf("GET %s: not modified, but its ETag %q is none of those asked", path, got.etag)
		}
		return got, nil
	case http.StatusOK:
		raw, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBytes)+1))
		switch {
		case err != nil:
			return fetched{}, fmt.Errorf("GET %s: %w", path, err)
		case len(raw) > maxBytes:
			return fetched{}, fmt.Errorf("GET %s: over %d MiB", path, maxBytes>>20)
		}
		got.raw = raw
		return got, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return fetched{}, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
}

// maxOpenAPIBytes bounds an OpenAPI document (a cluster with thousands of CRD versions serves
// some tens of MB).
const maxOpenAPIBytes = 256 << 20
