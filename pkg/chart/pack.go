// Package chart loads, packs, configures and renders Helm charts with Helm's own
// packages, so that rendered output is byte-identical to `helm template`.
//
// It has no I/O beyond reading a chart directory in Pack: values arrive as bytes
// (Inputs) and rendering never contacts a cluster.
package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// WerfChartDir is the chart directory inside a werf-style project directory.
const WerfChartDir = ".helm"

// archiveModTime is the modification time of every entry in a packed archive,
// fixed so that the same chart always gives the same bytes and digest.
var archiveModTime = time.Date(1980, time.January, 1, 0, 0, 0, 0, time.UTC)

// Meta identifies a packed chart.
type Meta struct {
	Name       string
	Version    string
	AppVersion string
}

// Pack loads the chart in dir (a chart directory, or a project directory with the
// chart in .helm/) with Helm's loader, honouring .helmignore, and returns it as a
// deterministic .tgz with its metadata and the sha256 hex digest of the archive.
func Pack(dir string) (archive []byte, meta Meta, digest string, err error) {
	chartDir, err := ResolveDir(dir)
	if err != nil {
		return nil, Meta{}, "", err
	}
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return nil, Meta{}, "", loadError(chartDir, err)
	}
	if err := checkInstallable(ch); err != nil {
		return nil, Meta{}, "", fmt.Errorf("chart %s: %w", chartDir, err)
	}
	archive, err = writeArchive(ch)
	if err != nil {
		return nil, Meta{}, "", fmt.Errorf("pack chart %s: %w", chartDir, err)
	}
	sum := sha256.Sum256(archive)
	meta = Meta{Name: ch.Metadata.Name, Version: ch.Metadata.Version, AppVersion: ch.Metadata.AppVersion}
	return archive, meta, hex.EncodeToString(sum[:]), nil
}

// Load loads a chart archive produced by Pack (or `helm package`).
func Load(archive []byte) (*helmchart.Chart, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("load chart archive: %w", err)
	}
	return ch, nil
}

// ResolveDir returns the chart directory for dir: dir itself when it holds a
// Chart.yaml, else dir/.helm when that is a directory (werf project layout).
func ResolveDir(dir string) (string, error) {
	if fileExists(filepath.Join(dir, "Chart.yaml")) {
		return dir, nil
	}
	helmDir := filepath.Join(dir, WerfChartDir)
	if fi, err := os.Stat(helmDir); err == nil && fi.IsDir() {
		return helmDir, nil
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("chart %s: %w", dir, err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("chart %s: not a directory", dir)
	}
	return "", fmt.Errorf("chart %s: no Chart.yaml and no %s/ directory", dir, WerfChartDir)
}

func fileExists(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && !fi.IsDir()
}

// loadError wraps a loader error; metadata validation errors get the Chart.yaml
// path, because Helm's text ("validation: chart.metadata.name is required") omits it.
func loadError(chartDir string, err error) error {
	var verr helmchart.ValidationError
	if errors.As(err, &verr) {
		return fmt.Errorf("load chart %s: %w", filepath.Join(chartDir, "Chart.yaml"), err)
	}
	return fmt.Errorf("load chart %s: %w", chartDir, err)
}

// writeArchive writes ch.Raw (every loaded file, subcharts included) under a
// top-level directory named after the chart, with fixed metadata, in the order
// Helm's loader read them: LoadDir walks the directory in lexical order per
// directory, so crds/a/x.yaml comes before crds/a.yaml. Loading the archive keeps
// that order, and with it the order of CRDs (Chart.CRDObjects) that `helm template
// --include-crds <dir>` prints; sorting by full path would put crds/a.yaml first.
func writeArchive(ch *helmchart.Chart) ([]byte, error) {
	files := ch.Raw

	var buf bytes.Buffer
	// The archive only travels to the Object Store and back, once per deploy: packing fast
	// matters more than its size (a 6 MB chart of CRDs packs in 0.05 instead of 0.3 CPU-s).
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		hdr := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     path.Join(ch.Metadata.Name, f.Name),
			Mode:     0o644,
			Size:     int64(len(f.Data)),
			ModTime:  archiveModTime,
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkInstallable applies the checks `helm install` and `helm template` make
// after loading: application charts only, and every dependency present.
func checkInstallable(ch *helmchart.Chart) error {
	switch ch.Metadata.Type {
	case "", "application":
	default:
		return fmt.Errorf("%s charts are not installable", ch.Metadata.Type)
	}
	var missing []string
outer:
	for _, r := range ch.Metadata.Dependencies {
		for _, d := range ch.Dependencies() {
			if d.Name() == r.Name {
				continue outer
			}
		}
		missing = append(missing, r.Name)
	}
	if len(missing) > 0 {
		return fmt.Errorf("found in Chart.yaml, but missing in charts/ directory: %s (run `helm dependency build`)", strings.Join(missing, ", "))
	}
	return nil
}
