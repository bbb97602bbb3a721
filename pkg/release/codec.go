package release

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	helmrelease "helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The records are written here rather than through Helm's storage driver so that each write
// encodes the record once (the size check needs the encoding) and every request carries the
// caller's context; the format is Helm's own — base64(gzip(json(release))) under the key
// "release", with the same labels — and `helm` reads it (test/e2e helmcompat). Reads of one
// record go through the same codec.

// recordKey is the name of the Secret or ConfigMap of one revision.
func recordKey(name string, version int) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version)
}

// encodeRecord is Helm's encoding of a release record, base64(gzip(json)). It compresses at
// gzip's default level — half the CPU of Helm's best compression for a record ~1 % larger —
// and at the best level only when that keeps a record under MaxRecordBytes that the default
// would not.
// The fields of keep (a record's JSON) that rel's type lacks are kept (helm4.go).
func encodeRecord(rel *helmrelease.Release, keep []byte) (string, error) {
	b, err := json.Marshal(rel)
	if err != nil {
		return "", err
	}
	if b, err = keepFields(b, keep); err != nil {
		return "", err
	}
	data, err := compress(b, gzip.DefaultCompression)
	if err != nil || len(data)+len("release") <= MaxRecordBytes {
		return data, err
	}
	return compress(b, gzip.BestCompression)
}

func compress(b []byte, level int) (string, error) {
	var buf bytes.Buffer
	w, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		return "", err
	}
	if _, err := w.Write(b); err != nil {
		return "", err
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// decodeRecord decodes what encodeRecord (or Helm) wrote and returns it with its JSON; records
// written before Helm compressed them are plain JSON.
func decodeRecord(data []byte) (*helmrelease.Release, []byte, error) {
	b, err := unpackRecord(data)
	if err != nil {
		return nil, nil, err
	}
	var rel helmrelease.Release
	if err := json.Unmarshal(b, &rel); err != nil {
		return nil, nil, err
	}
	return &rel, b, nil
}

// unpackRecord is the JSON of a record's data.
func unpackRecord(data []byte) ([]byte, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	if err != nil {
		return nil, err
	}
	b = b[:n]
	if len(b) > 3 && b[0] == 0x1f && b[1] == 0x8b && b[2] == 0x08 {
		r, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if b, err = io.ReadAll(r); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// recordLabelsOf are the labels Helm's drivers put on a record: the release's own labels,
// then name, owner, status and version, and createdAt or modifiedAt.
func recordLabelsOf(rel *helmrelease.Release, create bool, now time.Time) map[string]string {
	l := make(map[string]string, len(rel.Labels)+5)
	for k, v := range rel.Labels {
		l[k] = v
	}
	if create {
		l["createdAt"] = strconv.FormatInt(now.Unix(), 10)
	} else {
		l["modifiedAt"] = strconv.FormatInt(now.Unix(), 10)
	}
	l["name"], l["owner"], l["status"], l["version"] = rel.Name, "helm", rel.Info.Status.String(), strconv.Itoa(rel.Version)
	return l
}

// errRecordExists is returned by write when creating a record that exists.
var errRecordExists = errors.New("release record exists")

// encodeChecked encodes rel (keeping what keep has that rel's type lacks), refusing a record
// over MaxRecordBytes with a *RecordTooLargeError.
func encodeChecked(rel *helmrelease.Release, keep []byte) (string, error) {
	if rel.Info == nil {
		return "", fmt.Errorf("record release %s revision %d: no info", rel.Name, rel.Version)
	}
	data, err := encodeRecord(rel, keep)
	if err != nil {
		return "", fmt.Errorf("encode release %s revision %d: %w", rel.Name, rel.Version, err)
	}
	// The apiserver counts each data key with its value: the drivers' one key is "release".
	if n := len(data) + len("release"); n > MaxRecordBytes {
		return "", &RecordTooLargeError{Name: rel.Name, Revision: rel.Version, Size: n}
	}
	return data, nil
}

// put stores rel encoded as data: creates its Secret or ConfigMap (create; errRecordExists
// when it exists) or replaces it.
func (s *Store) put(ctx context.Context, rel *helmrelease.Release, data string, create bool) error {
	var err error
	meta := metav1.ObjectMeta{Name: recordKey(rel.Name, rel.Version), Labels: recordLabelsOf(rel, create, s.now())}
	verb := "update"
	if create {
		verb = "create"
	}
	if s.configMaps {
		cm := &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"release": data}}
		if create {
			_, err = s.client.CoreV1().ConfigMaps(s.namespace).Create(ctx, cm, metav1.CreateOptions{})
		} else {
			_, err = s.client.CoreV1().ConfigMaps(s.namespace).Update(ctx, cm, metav1.UpdateOptions{})
		}
	} else {
		sec := &corev1.Secret{ObjectMeta: meta, Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte(data)}}
		if create {
			_, err = s.client.CoreV1().Secrets(s.namespace).Create(ctx, sec, metav1.CreateOptions{})
		} else {
			_, err = s.client.CoreV1().Secrets(s.namespace).Update(ctx, sec, metav1.UpdateOptions{})
		}
	}
	if create && apierrors.IsAlreadyExists(err) {
		return errRecordExists
	}
	if err != nil {
		return fmt.Errorf("%s release %s revision %d: %w", verb, rel.Name, rel.Version, err)
	}
	return nil
}

// get reads and decodes the record of one revision; nil, nil when there is none.
func (s *Store) get(ctx context.Context, name string, version int) (*helmrelease.Release, error) {
	rel, _, err := s.getRaw(ctx, name, version)
	return rel, err
}

// getKept is Get with the record's JSON, for a rewrite that keeps what Helm 3's type lacks.
func (s *Store) getKept(ctx context.Context, name string, revision int) (*helmrelease.Release, []byte, error) {
	rel, raw, err := s.getRaw(ctx, name, revision)
	if err != nil {
		return nil, nil, fmt.Errorf("get release %s revision %d: %w", name, revision, err)
	}
	if rel == nil || !s.ownedBy(rel) {
		return nil, nil, fmt.Errorf("release %s revision %d in namespace %s: %w", name, revision, s.namespace, ErrNotFound)
	}
	return rel, raw, nil
}

// getRaw reads and decodes the record of one revision, with its JSON; nil when there is none.
func (s *Store) getRaw(ctx context.Context, name string, version int) (*helmrelease.Release, []byte, error) {
	key := recordKey(name, version)
	var data []byte
	var labels map[string]string
	if s.configMaps {
		cm, err := s.client.CoreV1().ConfigMaps(s.namespace).Get(ctx, key, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, labels = []byte(cm.Data["release"]), cm.Labels
	} else {
		sec, err := s.client.CoreV1().Secrets(s.namespace).Get(ctx, key, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		data, labels = sec.Data["release"], sec.Labels
	}
	rel, raw, err := decodeRecord(data)
	if err != nil {
		return nil, nil, fmt.Errorf("decode record %s: %w", key, err)
	}
	rel.Labels = customLabels(labels)
	return rel, raw, nil
}

// customLabels are a record's labels without those Helm's drivers set themselves.
func customLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		switch k {
		case "name", "owner", "status", "version", "createdAt", "modifiedAt":
			continue
		}
		out[k] = v
	}
	return out
}
