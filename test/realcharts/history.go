package realcharts

import (
	"fmt"
	"sort"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/kubernetes"
)

// FillHistory copies the newest record of a release (Secrets driver, namespace ns) until the
// release has n revisions, as a release deployed n times has: the copies keep the record's
// content, the older ones superseded, the newest deployed. Helm's own driver writes them.
func FillHistory(client kubernetes.Interface, ns, release string, n int) error {
	d := driver.NewSecrets(client.CoreV1().Secrets(ns))
	h, err := d.Query(map[string]string{"name": release, "owner": "helm"})
	if err != nil {
		return fmt.Errorf("history of %s: %w", release, err)
	}
	sort.Slice(h, func(i, j int) bool { return h[i].Version < h[j].Version })
	last := h[len(h)-1]
	for v := last.Version + 1; v <= n; v++ {
		prev := *last
		info := *last.Info
		info.Status = helmrelease.StatusSuperseded
		prev.Info = &info
		if err := d.Update(fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, last.Version), &prev); err != nil {
			return fmt.Errorf("supersede %s.v%d: %w", release, last.Version, err)
		}
		next := *last
		ninfo := *last.Info
		ninfo.Status = helmrelease.StatusDeployed
		next.Info, next.Version = &ninfo, v
		if err := d.Create(fmt.Sprintf("sh.helm.release.v1.%s.v%d", release, v), &next); err != nil {
			return fmt.Errorf("record %s.v%d: %w", release, v, err)
		}
		last = &next
	}
	return nil
}
