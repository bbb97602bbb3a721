package podlogs

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// SelectPods returns the names of the pods whose logs are shown, given a workload's current
// pods, the names chosen by the previous call (nil at first) and the limit
// (werf.io/show-logs-only-for-number-of-replicas; 0 or less: none).
//
// The rules, so that the choice is stable while pods come and go:
//   - a chosen pod stays chosen while it is among pods;
//   - a chosen pod that has finished (phase Succeeded or Failed) no longer takes a place, so
//     the next pod of a Job (a retry, the next completion) is shown after it;
//   - free places go to the oldest pods (creationTimestamp, then name) that are neither
//     finished nor being deleted;
//   - when that leaves nothing chosen and every pod has finished (a Job that completed before
//     tracking saw it), the oldest finished pods fill the places.
//
// Pass the pods of the workload's current revision only (the new ReplicaSet's, for a
// Deployment): SelectPods does not know revisions.
func SelectPods(pods []*corev1.Pod, chosen []string, limit int) []string {
	if limit <= 0 || len(pods) == 0 {
		return nil
	}
	byName := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		if p != nil {
			byName[p.Name] = p
		}
	}
	var out []string
	taken := map[string]bool{}
	places := limit
	for _, name := range chosen {
		p, ok := byName[name]
		if !ok || taken[name] {
			continue
		}
		if !finished(p) {
			if places == 0 { // the limit went down
				continue
			}
			places--
		}
		taken[name] = true
		out = append(out, name)
	}
	candidates := make([]*corev1.Pod, 0, len(byName))
	for _, p := range byName {
		if !taken[p.Name] && p.DeletionTimestamp == nil {
			candidates = append(candidates, p)
		}
	}
	sort.Slice(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	for _, p := range candidates {
		if places == 0 {
			break
		}
		if !finished(p) {
			places--
			out = append(out, p.Name)
		}
	}
	if len(out) == 0 {
		for _, p := range candidates {
			if len(out) == limit {
				break
			}
			out = append(out, p.Name)
		}
	}
	return out
}

// finished reports whether all of the pod's containers have stopped for good.
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// PodsFromUnstructured converts pods read through the dynamic client or an informer of
// unstructured objects.
func PodsFromUnstructured(items []*unstructured.Unstructured) ([]*corev1.Pod, error) {
	out := make([]*corev1.Pod, 0, len(items))
	for _, u := range items {
		p := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		out = append(out, p)
	}
	return out, nil
}
