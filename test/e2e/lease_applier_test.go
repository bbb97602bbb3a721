package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
)

// holdFinalizer keeps a deleted object of these tests until the test removes it.
const holdFinalizer = "sealane.dev/e2e-hold"

// TestLeaseRenewedWhileApplierWaits: a deploy whose cleanup phase waits for an object held by
// a finalizer, far longer than the lease TTL, keeps its lease (the applier renews it while it
// works): the deploy queued behind it waits, and runs only after it. Before, nothing renewed
// the lease during the applier's delete: it expired, the sweeper handed the release to the
// queued deploy and both applied at once.
func TestLeaseRenewedWhileApplierWaits(t *testing.T) {
	const ttl = 4 * time.Second
	sharePayloadKey(t)
	url := startNATS(t)
	start(t, "serve all", sealaneBin, "serve", "all", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info",
		"--lease-ttl", ttl.String())
	ns := namespace(t)
	chart := writeChart(t, "held", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  n: {{ .Values.n | default "0" | quote }}
{{- if .Values.hold }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-hold
  finalizers: [` + holdFinalizer + `]
{{- end }}
`})
	cs := clientset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	letGo := func() { // lets the held ConfigMap go
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "held-hold", metav1.GetOptions{})
		if err != nil {
			return
		}
		cm.Finalizers = nil
		if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Errorf("remove the finalizer of held-hold: %v", err)
		}
	}
	t.Cleanup(letGo) // whatever happens, the namespace can go

	if r := sealane(t, "", "deploy", chart, "--nats", url, "--release", "held", "--namespace", ns, "--set", "n=1,hold=true", "--timeout", "1m"); r.code != 0 {
		t.Fatalf("first deploy exit %d:\n%s", r.code, r.out)
	}
	// Revision 2 drops the held ConfigMap: its cleanup phase waits for it to go.
	second := sealaneBackground(t, t.TempDir(), "deploy", chart, "--nats", url, "--release", "held", "--namespace", ns, "--set", "n=2",
		"--timeout", "3m")
	if !eventually(ctx, time.Minute, func(ctx context.Context) bool {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "held-hold", metav1.GetOptions{})
		return err == nil && cm.DeletionTimestamp != nil
	}) {
		t.Fatalf("the second deploy never deleted held-hold:\n%s", second.output())
	}
	m := leaseManager(t, url)
	target := events.Target{Cluster: clusterName(t), Namespace: ns, Release: "held"}
	h, err := m.Get(ctx, target)
	if err != nil || h == nil {
		t.Fatalf("lease while the second deploy deletes = %+v, %v", h, err)
	}
	holder := h.DeployID
	third := sealaneBackground(t, t.TempDir(), "deploy", chart, "--nats", url, "--release", "held", "--namespace", ns, "--set", "n=3",
		"--timeout", "3m")
	if !eventually(ctx, 30*time.Second, func(ctx context.Context) bool { q, _ := m.Queued(ctx, target); return len(q) == 1 }) {
		t.Fatalf("the third deploy was not queued:\n%s", third.output())
	}

	time.Sleep(3 * ttl) // the delete outlives the TTL several times
	if h, err := m.Get(ctx, target); err != nil || h == nil || h.DeployID != holder || !h.Expires.After(time.Now()) {
		t.Errorf("lease after %s = %+v, %v; want deploy %s's, renewed", 3*ttl, h, err, holder)
	}
	if third.exited() {
		t.Errorf("the queued deploy ended while the holder still works:\n%s", third.output())
	}
	if q, _ := m.Queued(ctx, target); len(q) != 1 {
		t.Errorf("%d queued requests, want the third deploy still queued", len(q))
	}

	letGo()
	if r := second.wait(t, 2*time.Minute); r.code != 0 {
		t.Fatalf("second deploy exit %d:\n%s", r.code, r.out)
	}
	if r := third.wait(t, 2*time.Minute); r.code != 0 {
		t.Fatalf("third deploy exit %d:\n%s", r.code, r.out)
	}
	if order := checkNoOverlap(t, streamEvents(t, url, "held")); len(order) != 3 || order[1] != holder {
		t.Errorf("deploys started in order %v, want 3 with %s second", order, holder)
	}
	hist := helmHistory(t, ns, "held")
	var got []string
	for _, h := range hist {
		got = append(got, fmt.Sprintf("%d:%s", h.Revision, h.Status))
	}
	if strings.Join(got, " ") != "1:superseded 2:superseded 3:deployed" {
		t.Errorf("helm history %v, want 1, 2 superseded, 3 deployed", got)
	}
	checkUnlocked(t, url, target)
}
