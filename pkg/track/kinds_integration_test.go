package track_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/track"
)

// cleanup deletes the named object with del (a client's Delete), tolerating that it is gone.
func cleanup(t *testing.T, kind, name string, del func(context.Context, string, metav1.DeleteOptions) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete %s %s: %v", kind, name, err)
	}
}

// liveTrack is a TrackTargets call running in the background whose progress the test reads
// step by step, acting on the cluster between steps.
type liveTrack struct {
	progress chan track.Progress
	done     chan trackResult
	seen     []track.Progress
}

type trackResult struct {
	out track.Outcome
	err error
}

// startTrack runs TrackTargets with a one-minute timeout; on cleanup it stops the call and
// waits for it to return.
func startTrack(t *testing.T, c *kube.Cluster, targets ...track.Target) *liveTrack {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	l := &liveTrack{progress: make(chan track.Progress, 256), done: make(chan trackResult, 1)}
	go func() {
		out, err := track.TrackTargets(ctx, c, targets, track.Options{Timeout: time.Minute}, func(p track.Progress) {
			select {
			case l.progress <- p:
			case <-ctx.Done():
			}
		})
		l.done <- trackResult{out, err}
		close(l.progress)
	}()
	t.Cleanup(func() {
		cancel()
		for range l.progress {
		}
	})
	return l
}

// await returns once the latest status reported for ref (already read or read now) has state
// and a message containing msg; it fails the test if Track ends first or nothing matching comes
// within 45s.
func (l *liveTrack) await(t *testing.T, ref manifest.Ref, state readiness.State, msg string) readiness.Status {
	t.Helper()
	for i := len(l.seen) - 1; i >= 0; i-- {
		if p := l.seen[i]; p.Ref == ref {
			if p.Status.State == state && strings.Contains(p.Status.Message, msg) {
				return p.Status
			}
			break
		}
	}
	timeout := time.After(45 * time.Second)
	for {
		select {
		case p, ok := <-l.progress:
			if !ok {
				t.Fatalf("Track ended before %s was %s %q; seen:\n%s", ref, state, msg, l.log())
			}
			l.seen = append(l.seen, p)
			if p.Ref == ref && p.Status.State == state && strings.Contains(p.Status.Message, msg) {
				return p.Status
			}
		case <-timeout:
			t.Fatalf("%s not %s %q after 45s; seen:\n%s", ref, state, msg, l.log())
		}
	}
}

// finish waits for Track to return and returns its outcome.
func (l *liveTrack) finish(t *testing.T) track.Outcome {
	t.Helper()
	for p := range l.progress {
		l.seen = append(l.seen, p)
	}
	r := <-l.done
	if r.err != nil {
		t.Fatalf("Track: %v", r.err)
	}
	t.Logf("progress:\n%s", l.log())
	return r.out
}

func (l *liveTrack) log() string {
	var b strings.Builder
	for _, p := range l.seen {
		fmt.Fprintf(&b, "  %s %s %s\n", p.Ref, p.Status.State, p.Status.Message)
	}
	return b.String()
}

// statesOf lists the states reported for ref, in order.
func (l *liveTrack) statesOf(ref manifest.Ref) []readiness.State {
	var out []readiness.State
	for _, p := range l.seen {
		if p.Ref == ref {
			out = append(out, p.Status.State)
		}
	}
	return out
}

// patchStatus merge-patches obj's status subresource with the JSON patch.
func patchStatus(t *testing.T, c *kube.Cluster, ref manifest.Ref, patch string) {
	t.Helper()
	ri, _, err := c.ResourceFor(ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ri.Patch(testCtx(t), ref.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("patch status of %s: %v", ref, err)
	}
}

func wantReady(t *testing.T, out track.Outcome) {
	t.Helper()
	if !out.Ready || len(out.Failures) != 0 {
		t.Errorf("outcome = %+v, want ready", out)
	}
}

// TestTrackServiceAndIngressAddresses: a LoadBalancer Service and an Ingress wait for an address
// (the sandbox has no LB or ingress controller, so the test plays one through the status
// subresource); other Service types are ready at once; IngressStatus with the cluster's real
// IngressClasses stops waiting for an Ingress whose class no controller serves.
func TestTrackServiceAndIngressAddresses(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-kinds-")
	ctx := testCtx(t)
	noLeaks(t)
	port := []corev1.ServicePort{{Name: "http", Port: 80}}
	services := map[string]corev1.ServiceSpec{
		"lb":       {Type: corev1.ServiceTypeLoadBalancer, Ports: port, Selector: map[string]string{"app": "web"}},
		"plain":    {Type: corev1.ServiceTypeClusterIP, Ports: port, Selector: map[string]string{"app": "web"}},
		"headless": {ClusterIP: corev1.ClusterIPNone, Ports: port, Selector: map[string]string{"app": "web"}},
		"node":     {Type: corev1.ServiceTypeNodePort, Ports: port, Selector: map[string]string{"app": "web"}},
		"external": {Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"},
	}
	svcRef := func(name string) manifest.Ref {
		return manifest.Ref{APIVersion: "v1", Kind: "Service", Namespace: ns, Name: name}
	}
	targets := []track.Target{}
	for name, spec := range services {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
		if _, err := c.Typed.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create service %s: %v", name, err)
		}
		targets = append(targets, track.Target{Ref: svcRef(name)})
	}
	// "web" has a class (played by this test), so it waits for its address; "orphan" names a
	// class the cluster does not have, so nobody would ever publish one: it is not waited for.
	served, class := ns+"-served", ns+"-none"
	if _, err := c.Typed.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: served}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/h-kinds"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ingress class: %v", err)
	}
	t.Cleanup(func() {
		_ = c.Typed.NetworkingV1().IngressClasses().Delete(context.Background(), served, metav1.DeleteOptions{})
	})
	ingress := func(name, class string) *networkingv1.Ingress {
		return &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: networkingv1.IngressSpec{IngressClassName: &class, DefaultBackend: &networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "plain", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
		}
	}
	for name, cl := range map[string]string{"web": served, "orphan": class} {
		if _, err := c.Typed.NetworkingV1().Ingresses(ns).Create(ctx, ingress(name, cl), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ingress %s: %v", name, err)
		}
	}
	ingRef := manifest.Ref{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: ns, Name: "web"}
	orphanRef := manifest.Ref{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Namespace: ns, Name: "orphan"}
	targets = append(targets, track.Target{Ref: ingRef}, track.Target{Ref: orphanRef})

	l := startTrack(t, c, targets...)
	l.await(t, svcRef("lb"), readiness.Waiting, "no load-balancer controller has assigned an address yet (none may run in this cluster)")
	patchStatus(t, c, svcRef("lb"), `{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.10","ipMode":"VIP"}]}}}`)
	if st := l.await(t, svcRef("lb"), readiness.Ready, ""); st.Message != "load balancer 203.0.113.10" {
		t.Errorf("lb ready with message %q, want %q", st.Message, "load balancer 203.0.113.10")
	}
	l.await(t, ingRef, readiness.Waiting, "waiting for an ingress address")
	patchStatus(t, c, ingRef, `{"status":{"loadBalancer":{"ingress":[{"hostname":"lb.h-kinds.example.com"}]}}}`)
	l.await(t, ingRef, readiness.Ready, "address lb.h-kinds.example.com")
	wantReady(t, l.finish(t))
	for name := range services {
		if name == "lb" {
			continue
		}
		if got := l.statesOf(svcRef(name)); len(got) != 1 || got[0] != readiness.Ready {
			t.Errorf("service %s reported %v, want only READY", name, got)
		}
	}
	if got := l.statesOf(orphanRef); len(got) != 1 || got[0] != readiness.Ready {
		t.Errorf("ingress orphan (class without controller) reported %v, want only READY", got)
	}
	if got := l.statesOf(svcRef("lb")); len(got) != 2 || got[0] != readiness.Waiting || got[1] != readiness.Ready {
		t.Errorf("service lb reported %v, want WAITING then READY", got)
	}

	// The pure class check, fed with the cluster's real IngressClasses and Ingress.
	list, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasses"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list ingressclasses: %v", err)
	}
	classes := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		classes = append(classes, &list.Items[i])
	}
	orphan, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}).Namespace(ns).Get(ctx, "orphan", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ingress orphan: %v", err)
	}
	if got := readiness.ComputeAt(orphan, time.Now()); got.State != readiness.Waiting {
		t.Errorf("Compute(orphan) = %+v, want WAITING (classes unknown)", got)
	}
	want := "no ingress controller for class " + class + ": not waiting for an address"
	if got := readiness.IngressStatus(orphan, classes); got.State != readiness.Ready || got.Message != want {
		t.Errorf("IngressStatus(orphan, %d live classes) = %+v, want READY %q", len(classes), got, want)
	}
}

// TestTrackPVCBinds: a claim waits while Pending and is ready once the real PV controller binds
// it to a volume created later.
func TestTrackPVCBinds(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-kinds-")
	ctx := testCtx(t)
	noLeaks(t)
	size := resource.MustParse("1Mi")
	// A storage class whose (external) provisioner does not run: the claim waits quietly
	// (event ExternalProvisioning) instead of getting ProvisioningFailed for a missing class.
	class := ns
	t.Cleanup(func() { cleanup(t, "storageclass", class, c.Typed.StorageV1().StorageClasses().Delete) })
	immediate := storagev1.VolumeBindingImmediate
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: class, Labels: map[string]string{kubetest.TestLabel: "true"}},
		Provisioner:       "h-kinds.sealane.dev/none",
		VolumeBindingMode: &immediate,
	}
	if _, err := c.Typed.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create storage class: %v", err)
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	created, err := c.Typed.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pvc: %v", err)
	}
	ref := manifest.Ref{APIVersion: "v1", Kind: "PersistentVolumeClaim", Namespace: ns, Name: "data"}
	l := startTrack(t, c, track.Target{Ref: ref})
	l.await(t, ref, readiness.Waiting, "waiting for a volume of storage class "+class+" to bind")

	pvName := ns + "-pv"
	t.Cleanup(func() { cleanup(t, "persistentvolume", pvName, c.Typed.CoreV1().PersistentVolumes().Delete) })
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{kubetest.TestLabel: "true"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/" + ns}},
			// Reserved for the claim, UID included, so that the controller binds it at once.
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "data", UID: created.UID},
		},
	}
	if _, err := c.Typed.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pv: %v", err)
	}
	l.await(t, ref, readiness.Ready, "bound to volume "+pvName)
	wantReady(t, l.finish(t))
}

// widgetCRD is a namespaced CRD of kind Widget in its own group, with a status subresource.
func widgetCRD(group string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + group, "labels": map[string]any{kubetest.TestLabel: "true"}},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":                                 "object",
					"x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
}

// TestTrackCRDAndCustomResources: a CRD becomes Established; a custom resource of it waits for
// a controller to report status, then for its observedGeneration, then for Ready=True; one
// that reports Stalled=True fails the tracking with its reason.
func TestTrackCRDAndCustomResources(t *testing.T) {
	c := kubetest.Cluster(t)
	ns := kubetest.NamespaceWithPrefix(t, c, "h-kinds-")
	ctx := testCtx(t)
	noLeaks(t)
	group := ns + ".sealane.dev"
	crds := c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	t.Cleanup(func() {
		cleanup(t, "crd", "widgets."+group, func(ctx context.Context, name string, o metav1.DeleteOptions) error {
			return crds.Delete(ctx, name, o)
		})
	})
	if _, err := crds.Create(ctx, widgetCRD(group), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create crd: %v", err)
	}
	crdRef := manifest.Ref{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets." + group}
	l := startTrack(t, c, track.Target{Ref: crdRef})
	l.await(t, crdRef, readiness.Ready, "established")
	wantReady(t, l.finish(t))

	// A second definition claiming the kind Widget in the same group: the API server refuses
	// its names, which fails it.
	clash := widgetCRD(group)
	clash.SetName("gadgets." + group)
	_ = unstructured.SetNestedStringMap(clash.Object, map[string]string{"plural": "gadgets", "singular": "gadget", "kind": "Widget", "listKind": "WidgetList"}, "spec", "names")
	t.Cleanup(func() {
		cleanup(t, "crd", "gadgets."+group, func(ctx context.Context, name string, o metav1.DeleteOptions) error {
			return crds.Delete(ctx, name, o)
		})
	})
	if _, err := crds.Create(ctx, clash, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create clashing crd: %v", err)
	}
	clashRef := manifest.Ref{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "gadgets." + group}
	l = startTrack(t, c, track.Target{Ref: clashRef})
	st := l.await(t, clashRef, readiness.Failed, "names not accepted: ")
	if out := l.finish(t); out.Ready || len(out.Failures) != 1 || out.Failures[0].Reason != st.Message {
		t.Errorf("outcome = %+v, want one failure for %s: %q", out, clashRef, st.Message)
	}

	widgets := c.Dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(ns)
	widget := func(name string) manifest.Ref {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(1)},
		}}
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			// The new resource may take a moment to be served after Established.
			if _, err = widgets.Create(ctx, obj, metav1.CreateOptions{}); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("create widget %s: %v", name, err)
		}
		return manifest.Ref{APIVersion: group + "/v1", Kind: "Widget", Namespace: ns, Name: name}
	}

	t.Run("conditions drive readiness", func(t *testing.T) {
		good := widget("good")
		l := startTrack(t, c, track.Target{Ref: good})
		l.await(t, good, readiness.Waiting, "waiting for a controller to report status")
		patchStatus(t, c, good, `{"status":{"observedGeneration":1,"conditions":[{"type":"Ready","status":"False","reason":"Provisioning","message":"creating the widget"}]}}`)
		l.await(t, good, readiness.Waiting, "Ready=False (Provisioning): creating the widget")
		if _, err := widgets.Patch(ctx, "good", types.MergePatchType, []byte(`{"spec":{"size":2}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch spec: %v", err)
		}
		l.await(t, good, readiness.Waiting, "waiting for the controller to observe generation 2 (seen 1)")
		patchStatus(t, c, good, `{"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True","reason":"Provisioned","message":"widget is up"}]}}`)
		l.await(t, good, readiness.Ready, "Ready=True (Provisioned): widget is up")
		wantReady(t, l.finish(t))
	})
	t.Run("stalled fails", func(t *testing.T) {
		bad := widget("bad")
		l := startTrack(t, c, track.Target{Ref: bad})
		l.await(t, bad, readiness.Waiting, "")
		patchStatus(t, c, bad, `{"status":{"observedGeneration":1,"conditions":[{"type":"Stalled","status":"True","reason":"InvalidSpec","message":"size 1 is below the minimum"}]}}`)
		want := "stalled: InvalidSpec: size 1 is below the minimum"
		l.await(t, bad, readiness.Failed, want)
		out := l.finish(t)
		if out.Ready || len(out.Failures) != 1 || out.Failures[0].Ref != bad || out.Failures[0].Reason != want {
			t.Errorf("outcome = %+v, want one failure for %s: %q", out, bad, want)
		}
	})
}
