package release

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Header is what a release record's labels say without decoding the record: Helm writes the
// release name, the revision and its status as labels of the Secret or ConfigMap with every
// write. A release of ten revisions with a large chart is megabytes of records; its headers
// are a few hundred bytes each.
type Header struct {
	Name    string
	Version int
	Status  helmrelease.Status
}

// partialList asks the apiserver for objects' metadata only.
const partialList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

// Headers returns the headers of every record of the release, oldest first (none: an empty
// slice). Only metadata is read — except with WithReleaseNamespace, where the records must be
// decoded to tell the release namespaces apart.
func (s *Store) Headers(ctx context.Context, name string) ([]Header, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.releaseNamespace != "" {
		h, err := s.History(ctx, name)
		if err != nil {
			return nil, err
		}
		out := make([]Header, 0, len(h))
		for _, r := range h {
			hd := Header{Name: r.Name, Version: r.Version}
			if r.Info != nil {
				hd.Status = r.Info.Status
			}
			out = append(out, hd)
		}
		return out, nil
	}
	labels, err := s.recordLabels(ctx, "name="+name+",owner=helm")
	if err != nil {
		return nil, fmt.Errorf("history of release %s in namespace %s: %w", name, s.namespace, err)
	}
	out := make([]Header, 0, len(labels))
	for _, l := range labels {
		v, err := strconv.Atoi(l["version"])
		if err != nil || l["name"] != name {
			continue // not a record Helm wrote
		}
		out = append(out, Header{Name: name, Version: v, Status: helmrelease.Status(l["status"])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// recordLabels lists the labels of the records selector selects: as metadata only when the
// client talks to an apiserver, else (fake clients in tests) from a plain List.
func (s *Store) recordLabels(ctx context.Context, selector string) ([]map[string]string, error) {
	resource := "secrets"
	if s.configMaps {
		resource = "configmaps"
	}
	if rc, ok := s.client.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		raw, err := rc.Get().Namespace(s.namespace).Resource(resource).Param("labelSelector", selector).
			SetHeader("Accept", partialList).Do(ctx).Raw()
		if err != nil {
			return nil, err
		}
		var list metav1.PartialObjectMetadataList
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("decode the records' metadata: %w", err)
		}
		out := make([]map[string]string, 0, len(list.Items))
		for _, it := range list.Items {
			out = append(out, it.Labels)
		}
		return out, nil
	}
	opts := metav1.ListOptions{LabelSelector: selector}
	var out []map[string]string
	if s.configMaps {
		list, err := s.client.CoreV1().ConfigMaps(s.namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for _, it := range list.Items {
			out = append(out, it.Labels)
		}
		return out, nil
	}
	list, err := s.client.CoreV1().Secrets(s.namespace).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for _, it := range list.Items {
		out = append(out, it.Labels)
	}
	return out, nil
}

// LastHeader returns the header of the release's newest record, or an error wrapping
// ErrNotFound.
func (s *Store) LastHeader(ctx context.Context, name string) (Header, error) {
	hs, err := s.Headers(ctx, name)
	if err != nil {
		return Header{}, err
	}
	if len(hs) == 0 {
		return Header{}, fmt.Errorf("release %s in namespace %s: %w", name, s.namespace, ErrNotFound)
	}
	return hs[len(hs)-1], nil
}

// findHeader returns the header of revision in hs, or nil.
func findHeader(hs []Header, revision int) *Header {
	for i := range hs {
		if hs[i].Version == revision {
			return &hs[i]
		}
	}
	return nil
}

// nextOf is the revision after the newest of hs (1 when there is none).
func nextOf(hs []Header) int {
	if len(hs) == 0 {
		return 1
	}
	return hs[len(hs)-1].Version + 1
}

// deployedOf returns the newest deployed revision of hs, or nil.
func deployedOf(hs []Header) *Header {
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].Status == helmrelease.StatusDeployed {
			return &hs[i]
		}
	}
	return nil
}

// prune deletes the oldest records of the release until at most keep remain, never the newest
// deployed one — Helm's rule (storage.removeLeastRecent), here on headers only: no record is
// decoded to be deleted. keep < 1 keeps everything.
func (s *Store) prune(ctx context.Context, name string, hs []Header, keep int) error {
	if keep < 1 || len(hs) <= keep {
		return nil
	}
	deployed := deployedOf(hs)
	remaining := len(hs)
	for _, h := range hs {
		if remaining <= keep {
			break
		}
		if deployed != nil && h.Version == deployed.Version {
			continue
		}
		if err := s.deleteRecord(ctx, name, h.Version); err != nil {
			return err
		}
		remaining--
	}
	return nil
}
