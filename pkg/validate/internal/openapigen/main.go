// Command openapigen writes the OpenAPI v2 schema that package validate embeds for offline
// validation. It fetches /openapi/v2 (protobuf) from a cluster, keeps only the definitions of
// built-in API groups (CRDs installed in the cluster are left out), drops everything validation
// does not read (paths, descriptions, defaults, examples, vendor extensions other than
// x-kubernetes-group-version-kind) and writes it as deterministic gzip-compressed protobuf, plus
// the cluster's version in a text file. Run it through hack/update-openapi.sh.
package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/pkg/validate"
)

const protoMIME = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

// builtinPrefixes are the definition-name prefixes of the types kube-apiserver itself serves.
var builtinPrefixes = []string{
	"io.k8s.api.",
	"io.k8s.apimachinery.",
	"io.k8s.apiextensions-apiserver.",
	"io.k8s.kube-aggregator.",
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to read the schema from")
	out := flag.String("out", "pkg/validate/schema", "directory to write kubernetes.pb.gz and kubernetes-version.txt to")
	version := flag.String("version", "", "Kubernetes version to record (default: the cluster's /version, or its OpenAPI info.version when /version is a development build)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *kubeconfig, *out, *version); err != nil {
		fmt.Fprintln(os.Stderr, "openapigen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, out, version string) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %q: %w", kubeconfig, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("discovery client for %s: %w", cfg.Host, err)
	}
	raw, err := dc.RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", protoMIME).Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("get %s/openapi/v2: %w", cfg.Host, err)
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(raw, doc); err != nil {
		return fmt.Errorf("decode %s/openapi/v2: %w", cfg.Host, err)
	}
	if version == "" {
		if version, err = clusterVersion(ctx, dc, doc); err != nil {
			return err
		}
	}
	kept, dropped := prune(doc)
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encode schema: %w", err)
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	if _, err := zw.Write(data); err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	if err := os.WriteFile(filepath.Join(out, "kubernetes.pb.gz"), gz.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write schema: %w", err)
	}
	if err := os.WriteFile(filepath.Join(out, "kubernetes-version.txt"), []byte(version+"\n"), 0o644); err != nil {
		return fmt.Errorf("write version: %w", err)
	}
	fmt.Printf("openapigen: Kubernetes %s from %s: %d definitions kept, %d dropped (not built in); %d bytes protobuf, %d bytes gzip\n",
		version, cfg.Host, kept, dropped, len(data), gz.Len())
	return nil
}

// clusterVersion returns the cluster's gitVersion, or "v" + the schema's info.version when the
// apiserver is a development build (v0.0.0-...), as a sandbox built from source is.
func clusterVersion(ctx context.Context, dc *discovery.DiscoveryClient, doc *openapi_v2.Document) (string, error) {
	raw, err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return "", fmt.Errorf("get /version: %w", err)
	}
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("decode /version %q: %w", raw, err)
	}
	if v.GitVersion != "" && !strings.HasPrefix(v.GitVersion, "v0.0.0") {
		return v.GitVersion, nil
	}
	if iv := doc.GetInfo().GetVersion(); iv != "" {
		return "v" + strings.TrimPrefix(iv, "v"), nil
	}
	return "", fmt.Errorf("cluster reports no usable version (/version %q); pass -version", v.GitVersion)
}

// prune keeps the built-in definitions and strips what validation does not use. It returns how
// many definitions were kept and dropped.
func prune(doc *openapi_v2.Document) (kept, dropped int) {
	validate.StripDocument(doc)
	var defs []*openapi_v2.NamedSchema
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		if !builtin(d.GetName()) {
			dropped++
			continue
		}
		defs = append(defs, d)
	}
	if doc.Definitions != nil {
		doc.Definitions.AdditionalProperties = defs
	}
	return len(defs), dropped
}

func builtin(name string) bool {
	for _, p := range builtinPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
