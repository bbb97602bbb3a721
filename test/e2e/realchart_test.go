package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sealane/sealane/test/apicount"
	"github.com/sealane/sealane/test/realcharts"
)

// TestRealChartCosts deploys the monitoring-stack-shaped chart (test/realcharts: 10 CRDs of
// 4.5 MB in a subchart, hook Jobs with their own RBAC, custom resources, large ConfigMaps)
// with the CLI through a counting proxy, and holds what each deploy asks of the cluster to
// numbers a regression would change: how often the release history is read and what that
// costs, how many records are decoded, whether unchanged CRDs are read whole or applied, the
// bytes read in all. Not timed. Deploys: install; one Deployment changed at a history of 10
// revisions; the same again (nothing to do).
func TestRealChartCosts(t *testing.T) {
	ns := namespace(t)
	release := "mon-" + ns[max(0, len(ns)-6):] // its ClusterRoles are named after it: its own
	group := ns + ".monitoring.test"           // the test's own CRDs
	chart, err := realcharts.WriteMonitoringStackInGroup(filepath.Join(t.TempDir(), "monstack"), group)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := apicount.Start(kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	counted, err := proxy.WriteKubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := clientset(t)
	t.Cleanup(func() { cleanupRealChart(t, release, group) })
	dataDir := t.TempDir()
	deploy := func(what string, args ...string) apicount.Counts {
		t.Helper()
		proxy.Reset()
		r := run(t, 10*time.Minute, sealaneBin, append([]string{"deploy", chart, "--release", release, "--namespace", ns,
			"--kubeconfig", counted, "--data-dir", dataDir, "--timeout", "5m"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%s: sealane deploy exited %d:\n%s", what, r.code, r.out)
		}
		c := proxy.Counts()
		t.Logf("%s: %s", what, c)
		return c
	}

	install := deploy("install")
	if install.HistoryReads > 6 || install.RecordGets > 1 {
		t.Errorf("install: %d history reads, %d records decoded; want at most 6 and 1", install.HistoryReads, install.RecordGets)
	}
	if err := realcharts.FillHistory(cs, ns, release, 10); err != nil {
		t.Fatal(err)
	}

	change := deploy("change at 10 revisions", "--set", "gen=2")
	// The history is read from the records' labels (a few hundred bytes each), never whole: the
	// renderer decodes the deployed revision, the recorder the one it ends and the one it
	// supersedes.
	if change.HistoryReads > 5 || change.HistoryBytes > 64<<10 || change.RecordGets > 3 {
		t.Errorf("change: %d history reads of %s, %d records decoded; want at most 5 reads, 64 KB, 3 records",
			change.HistoryReads, apicount.Bytes(change.HistoryBytes), change.RecordGets)
	}
	wantNone(t, "change", change, "APPLY customresourcedefinitions", "GET customresourcedefinitions", "LIST customresourcedefinitions",
		"WATCH customresourcedefinitions")
	if change.BytesRead > 4<<20 {
		t.Errorf("change: read %s from the apiserver, want at most 4 MB (the CRDs alone are 4.5 MB)", apicount.Bytes(change.BytesRead))
	}
	if n := writes(change); n > 60 {
		t.Errorf("change: %d writes, want at most 60 (one Deployment, the hooks and their RBAC, two records)", n)
	}

	same := deploy("the same again", "--set", "gen=2")
	if n := writes(same); n != 0 {
		t.Errorf("unchanged: %d writes (%s), want none: the release is up to date", n, same)
	}
	// The renderer decodes the deployed revision (its manifest and values), the recorder reads
	// it back for its test hooks (release_recorded.tests).
	if same.HistoryReads > 3 || same.RecordGets > 2 || same.BytesRead > 2<<20 {
		t.Errorf("unchanged: %d history reads, %d records decoded, %s read; want at most 3, 2 and 2 MB",
			same.HistoryReads, same.RecordGets, apicount.Bytes(same.BytesRead))
	}
	wantNone(t, "unchanged", same, "GET customresourcedefinitions", "LIST customresourcedefinitions")
	if r := run(t, time.Minute, helmBin, "history", release, "-n", ns, "--kubeconfig", kubeconfig); r.code != 0 ||
		strings.Count(r.out, "\n") != 11 || !strings.Contains(r.out, "deployed") {
		// 10 revisions (the history limit) and the header
		t.Errorf("helm history (want 10 revisions, the last deployed):\n%s", r.out)
	}
}

// wantNone fails t when c holds any of the requests keys names.
func wantNone(t *testing.T, what string, c apicount.Counts, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if n := c.Requests[k]; n > 0 {
			t.Errorf("%s: %d × %s, want none", what, n, k)
		}
	}
}

// writes counts the requests of c that change the cluster.
func writes(c apicount.Counts) int {
	n := 0
	for k, v := range c.Requests {
		verb, _, _ := strings.Cut(k, " ")
		switch strings.TrimSuffix(verb, "(meta)") {
		case "CREATE", "UPDATE", "PATCH", "APPLY", "DELETE":
			n += v
		}
	}
	return n
}

// cleanupRealChart deletes what TestRealChartCosts created outside its namespace: the
// release's cluster-scoped objects and the test's CRDs.
func cleanupRealChart(t *testing.T, release, group string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, gvr := range []schema.GroupVersionResource{
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"},
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	} {
		err := dyn.Resource(gvr).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",release=" + release})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Logf("cleanup %s: %v", gvr.Resource, err)
		}
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("cleanup CRDs: %v", err)
		return
	}
	for _, c := range list.Items {
		if strings.HasSuffix(c.GetName(), "."+group) {
			if err := crds.Delete(ctx, c.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("cleanup CRD %s: %v", c.GetName(), err)
			}
		}
	}
}
