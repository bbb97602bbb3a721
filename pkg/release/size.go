package release

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"
)

// MaxRecordBytes is the most a record may take in its Secret or ConfigMap: the
// API server's 1 MiB limit on their data.
const MaxRecordBytes = 1 << 20

// RecordTooLargeError reports a release record that would pass MaxRecordBytes.
type RecordTooLargeError struct {
	Name     string
	Revision int
	Size     int // bytes of the encoded record
}

// Error implements error.
func (e *RecordTooLargeError) Error() string {
	return fmt.Sprintf("release record %s.v%d is %d bytes, over the 1 MiB object limit: "+
		"it holds the chart's templates, files and values and the rendered manifest; "+
		"exclude large files with .helmignore or split the chart",
		e.Name, e.Revision, e.Size)
}

// encodedSize is the size of the record as Helm's drivers store it:
// base64(gzip(json(release))) with gzip.BestCompression.
func encodedSize(rel *helmrelease.Release) (int, error) {
	b, err := json.Marshal(rel)
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return 0, err
	}
	if _, err := w.Write(b); err != nil {
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	return base64.StdEncoding.EncodedLen(buf.Len()), nil
}

// checkSize refuses a record over MaxRecordBytes with a *RecordTooLargeError.
func checkSize(rel *helmrelease.Release) error {
	n, err := encodedSize(rel)
	if err != nil {
		return fmt.Errorf("encode release %s revision %d: %w", rel.Name, rel.Version, err)
	}
	// The API server counts each data key with its value: the drivers' one key is "release".
	n += len("release")
	if n > MaxRecordBytes {
		return &RecordTooLargeError{Name: rel.Name, Revision: rel.Version, Size: n}
	}
	return nil
}
