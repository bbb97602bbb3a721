package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/version"
)

// keyFormat starts every key's hashed text; change it when KeyInput changes meaning, so that
// renders cached under the old meaning are never found again.
const keyFormat = "sealane render key v1\n"

// KeyInput is everything a render's Result can depend on, for a chart that does not read the
// cluster and calls nothing random (Cacheable): two Requests with equal KeyInputs render the
// same Result, so one render can serve every target that shares them (a fleet rollout).
// Nothing in it is secret: secret values enter only as the encrypted inputs and a
// fingerprint of the key that decrypts them.
type KeyInput struct {
	// ChartDigest is the digest of the chart archive: its templates, files, values.yaml,
	// crds/, subcharts, and its still-encrypted secret-values.yaml and secret/ files.
	ChartDigest string `json:"chart"`
	// Inputs are the user's values files, --secret-values files (encrypted, as they travel)
	// and the --set family. The decrypted SecretValues are never part of a key.
	Inputs chart.Inputs `json:"inputs"`
	// SecretKey is the fingerprint of the key the renderer decrypts with ("" for none);
	// IgnoreSecrets is werf's --ignore-secret-key (ciphertext rendered as is).
	SecretKey     string `json:"secretKey,omitempty"`
	IgnoreSecrets bool   `json:"ignoreSecrets,omitempty"`
	// Release is .Release: name, namespace, revision and whether it is an upgrade (IsInstall
	// is its negation).
	Release chart.Release `json:"release"`
	// Service are the service values: env, namespace, project, images, image repository,
	// git metadata, sealane version.
	Service chart.ServiceValues `json:"service"`
	// Metadata are the annotations and labels the deploy adds (applied after the render, and
	// keyed anyway so that a cached render never travels with another deploy's metadata).
	Metadata Metadata `json:"metadata"`
	// KubeVersion, HelmVersion and APIVersions are .Capabilities; APIVersions sorted (Helm
	// lists them in map order, a new one on every call: nothing may depend on it).
	KubeVersion string   `json:"kubeVersion"`
	HelmVersion string   `json:"helmVersion,omitempty"`
	APIVersions []string `json:"apiVersions"`
	// SchemaDigest identifies the OpenAPI schema the objects were validated against ("": the
	// hard checks only): the validation warnings are part of the Result.
	SchemaDigest string `json:"schema,omitempty"`
	// Build identifies the sealane build that renders (BuildIdentity): another build may
	// render differently.
	Build string `json:"build"`
}

// NewKeyInput returns the KeyInput of req for a chart whose archive has chartDigest, validated
// against a schema identified by schemaDigest, deployed with meta.
func NewKeyInput(req Request, chartDigest, schemaDigest string, meta Metadata) KeyInput {
	in := req.Inputs
	in.SecretValues = nil // decrypted values never enter a key
	svc := req.Service
	if svc.Namespace == "" {
		svc.Namespace = req.Release.Namespace // as Render does
	}
	k := KeyInput{
		ChartDigest: chartDigest, Inputs: in, SecretKey: req.Secrets.Key.Fingerprint(), IgnoreSecrets: req.Secrets.Ignore,
		Release: req.Release, Service: svc, Metadata: meta, KubeVersion: req.KubeVersion, APIVersions: req.APIVersions,
		SchemaDigest: schemaDigest, Build: BuildIdentity(),
	}
	if c := req.Capabilities; c != nil {
		k.KubeVersion, k.HelmVersion, k.APIVersions = c.KubeVersion.Version, c.HelmVersion.Version, c.APIVersions
	}
	k.APIVersions = slices.Sorted(slices.Values(k.APIVersions))
	return k
}

// Key returns the render key of in: the hex SHA-256 of its canonical JSON (struct fields in
// order, map keys sorted, slices in order).
func Key(in KeyInput) string {
	in.Inputs.SecretValues = nil
	raw, err := json.Marshal(in)
	if err != nil { // strings, bools, ints, maps of strings: cannot fail
		panic("render: encode key input: " + err.Error())
	}
	h := sha256.New()
	h.Write([]byte(keyFormat))
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil))
}

var (
	buildOnce sync.Once
	buildID   string
)

// BuildIdentity identifies this sealane build for render keys, computed once: its version and
// commit, what Go recorded of its source (VCS revision, modified), and the size and time of its
// executable — a development build is "dev" whatever its code, and hashing a 100 MB executable
// would cost the CLI's first render ~70 ms. Replicas of one image share it.
func BuildIdentity() string {
	buildOnce.Do(func() {
		parts := []string{version.String(), version.Commit}
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
					parts = append(parts, s.Value)
				}
			}
		}
		if path, err := os.Executable(); err == nil {
			if fi, err := os.Stat(path); err == nil {
				parts = append(parts, fmt.Sprintf("%d@%d", fi.Size(), fi.ModTime().UnixNano()))
			}
		}
		buildID = strings.Join(parts, "+")
	})
	return buildID
}
