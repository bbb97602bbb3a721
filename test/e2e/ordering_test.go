package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/events"
)

// createNamespace creates ns (deleted by namespace's cleanup).
func createNamespace(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", ns, err)
	}
}

// externalDeployment is a one-replica Deployment that is not part of any release; with unready
// its pods run but never become Ready (the sandbox's sealane.dev/test-unready label).
func externalDeployment(name string, unready bool) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": name}
	if unready {
		labels["sealane.dev/test-unready"] = "true"
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:16"}}},
			},
		},
	}
}

// deploymentReady reports whether every replica of the Deployment is updated and available.
func deploymentReady(ctx context.Context, cs kubernetes.Interface, ns, name string) bool {
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || d.Spec.Replicas == nil {
		return false
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == *d.Spec.Replicas &&
		s.AvailableReplicas == *d.Spec.Replicas && s.Replicas == *d.Spec.Replicas
}

// TestDeployOrdering installs a chart that uses every ordering rule and checks, from the
// deploy's event stream, that the pipeline kept the partial order they define: pre-install hooks
// by hook weight (then kind), weight groups each applied after the previous one is ready,
// explicit dependencies (ready and present) overriding weight, auto-detected dependencies
// (ConfigMap, Secret, ServiceAccount, PVC of a pod template; RoleBinding → Role), an external
// dependency in another namespace, Helm's kind order inside a group, post-install hooks last;
// then upgrades it (one ConfigMap changed) and checks the same order, pre/post-upgrade hooks
// recreated.
func TestDeployOrdering(t *testing.T) {
	ns, extNS := namespace(t), namespace(t)
	ctx := context.Background()
	cs := clientset(t)
	t.Cleanup(func() { // the chart's PersistentVolume is cluster-scoped
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), ns+"-data", metav1.DeleteOptions{})
	})
	createNamespace(t, cs, extNS)
	if _, err := cs.AppsV1().Deployments(extNS).Create(ctx, externalDeployment("ext-db", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(ctx, time.Minute, func(ctx context.Context) bool { return deploymentReady(ctx, cs, extNS, "ext-db") }) {
		t.Fatal("external Deployment ext-db never became ready")
	}

	data := t.TempDir()
	for i, op := range []string{"install", "upgrade"} {
		r := sealane(t, data, "deploy", "test/e2e/testdata/ordering", "--release", "order", "--namespace", ns,
			"--set", "externalNamespace="+extNS, "--set", fmt.Sprintf("stamp=%d", i+1), "--timeout", "3m", "-o", "json")
		if r.code != 0 {
			t.Fatalf("%s exit %d:\n%s", op, r.code, r.out)
		}
		t.Run(op, func(t *testing.T) { checkOrder(t, parseEvents(t, r.out), extNS) })
		if t.Failed() {
			break
		}
	}
	if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "ext-db", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("external dependency was created in the release namespace: %v", err)
	}
	// The PVC really was usable: bound to the chart's volume.
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "auto-pvc", metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound {
		t.Errorf("PVC auto-pvc: %v, phase %v", err, pvc.Status.Phase)
	}
	if hist := helmHistory(t, ns, "order"); len(hist) != 2 || hist[1].Status != "deployed" {
		t.Errorf("helm history = %+v, want revision 2 deployed", hist)
	}
}

// checkOrder checks the partial order the ordering chart defines on one deploy's events.
func checkOrder(t *testing.T, l *eventLog, extNS string) {
	a := func(kind, name string) appliedAt { t.Helper(); return l.apply(t, kind, name) }
	ready := func(kind, name string) stateAt { t.Helper(); return l.ready(t, kind, name) }

	// Pre-install hooks by hook weight: -5, then 0 (ConfigMap before Job, the kind order), then 5,
	// each group completed before the next starts.
	preLow, preCM, preJob, preHigh := a("ConfigMap", "pre-cm-low"), a("ConfigMap", "pre-cm-zero"), a("Job", "pre-job-zero"), a("Job", "pre-job-high")
	phaseBefore(t, "hook weight -5 before 0", preLow, preCM)
	if preCM.phase != preJob.phase {
		t.Errorf("hooks of equal weight in different phases: %v, %v", preCM, preJob)
	}
	appliedBefore(t, "kind order among hooks of weight 0", preCM, preJob)
	readyBefore(t, "hook weight 0 completes before weight 5 starts", ready("Job", "pre-job-zero"), preHigh)

	// Main resources start after the last pre-install hook completed.
	wNeg, early, wZero, wPos := a("ConfigMap", "w-neg"), a("Deployment", "early"), a("ConfigMap", "w-zero"), a("ConfigMap", "w-pos")
	for _, x := range []appliedAt{wNeg, early, a("ConfigMap", "needs-db"), a("Deployment", "use-cm")} {
		readyBefore(t, "pre-install hooks complete before main resources", ready("Job", "pre-job-high"), x)
	}

	// Weight groups: -10 < 0 < 10; the -10 group (with Deployment early) is ready before the 0
	// group starts, and the 0 group (with Deployment db) before the 10 group.
	phaseBefore(t, "weight -10 before 0", wNeg, wZero)
	phaseBefore(t, "weight 0 before 10", wZero, wPos)
	if early.phase != wNeg.phase {
		t.Errorf("equal weight -10 in different phases: %v, %v", wNeg, early)
	}
	readyBefore(t, "weight -10 group ready before weight 0 starts", ready("Deployment", "early"), wZero)
	readyBefore(t, "weight 0 group ready before weight 10 starts", ready("Deployment", "db"), wPos)

	// Default weight is 0: the same group as an explicit "0"; Helm's kind order inside it.
	kinds := []appliedAt{
		a("NetworkPolicy", "k-netpol"), a("PodDisruptionBudget", "k-pdb"), a("ServiceAccount", "k-sa"),
		a("Secret", "k-secret"), a("ConfigMap", "kind-cm"), a("Role", "k-role"), a("RoleBinding", "k-rb"),
		a("Service", "api"), a("Deployment", "db"),
	}
	for i, k := range kinds {
		if k.phase != wZero.phase {
			t.Errorf("weight 0 (default) resource %v not in the phase of the explicit weight 0 %v", k, wZero)
		}
		if i > 0 {
			appliedBefore(t, "Helm kind order within a weight group", kinds[i-1], k)
		}
	}

	// Explicit dependencies ignore weight: needs-db (weight -20) waits for Deployment db to be
	// ready; needs-db-present only for it to be applied, not ready.
	needsDB, needsPresent, needsTwo := a("ConfigMap", "needs-db"), a("ConfigMap", "needs-db-present"), a("ConfigMap", "needs-two")
	readyBefore(t, "state=ready dependency on Deployment db", ready("Deployment", "db"), needsDB)
	appliedBefore(t, "weight -20 is ignored with an explicit dependency", wNeg, needsDB)
	appliedBefore(t, "state=present dependency on Deployment db", a("Deployment", "db"), needsPresent)
	if r := ready("Deployment", "db"); needsPresent.seq > r.seq {
		t.Errorf("state=present dependency waited for readiness: %v after %v", needsPresent, r)
	}
	appliedBefore(t, "state=present dependency on Service api", a("Service", "api"), needsTwo)
	// A ConfigMap is ready once applied (readiness.ReadyWhenApplied: the tracker does not wait for
	// it): the dependency is met by its apply in an earlier phase.
	phaseBefore(t, "state=ready dependency on ConfigMap w-pos", a("ConfigMap", "w-pos"), needsTwo)

	// Auto-detected dependencies: each user is applied after what it uses (at weight 10), though
	// its own explicit dependency (w-neg) would let it go much earlier.
	for _, c := range []struct{ user, usedKind, used string }{
		{"use-cm", "ConfigMap", "auto-cm"},
		{"use-secret", "Secret", "auto-secret"},
		{"use-sa", "ServiceAccount", "auto-sa"},
		{"use-pvc", "PersistentVolumeClaim", "auto-pvc"},
	} {
		u := a("Deployment", c.user)
		appliedBefore(t, "Deployment "+c.user+" uses "+c.usedKind+" "+c.used, a(c.usedKind, c.used), u)
		appliedBefore(t, "explicit dependency of "+c.user, wNeg, u)
	}
	appliedBefore(t, "RoleBinding use-role binds Role auto-role", a("Role", "auto-role"), a("RoleBinding", "use-role"))

	// External dependency: needs-ext is applied only after ext-db (another namespace) is ready.
	extReady := ready("Deployment", "ext-db")
	readyBefore(t, "external dependency ext-db", extReady, a("ConfigMap", "needs-ext"))
	for _, s := range l.states {
		if s.res.Name == "ext-db" && s.res.Namespace != extNS {
			t.Errorf("external dependency tracked in namespace %q, want %q", s.res.Namespace, extNS)
		}
	}

	// Post-install hooks after every main resource is ready, by hook weight.
	postFirst, postSecond := a("Job", "post-job-first"), a("ConfigMap", "post-cm-second")
	for _, m := range [][2]string{{"Deployment", "db"}, {"Deployment", "early"}, {"Deployment", "use-cm"}, {"Deployment", "use-pvc"}} {
		readyBefore(t, "main resources ready before post-install hooks", ready(m[0], m[1]), postFirst)
	}
	for _, cm := range []string{"needs-two", "needs-ext"} { // ready once applied
		phaseBefore(t, "main resources applied before post-install hooks", a("ConfigMap", cm), postFirst)
	}
	readyBefore(t, "post hook weight -1 completes before weight 1", ready("Job", "post-job-first"), postSecond)

	// Hooks are recreated on every deploy (before-hook-creation by default).
	for _, h := range []appliedAt{preLow, preCM, preJob, preHigh, postFirst, postSecond} {
		if h.action != events.ActionCreated && h.action != events.ActionRecreated {
			t.Errorf("hook %v: want created or recreated", h)
		}
	}
	if l.types[len(l.types)-1] != events.ReleaseRecorded {
		t.Errorf("the stream does not end with the release record")
	}
}

// TestDeployWaitsForExternalDependency starts a deploy whose ConfigMap depends on a Deployment
// in another namespace that does not exist yet, then exists but is not ready, then becomes
// ready: the dependent is applied only at the end and the deploy then succeeds.
func TestDeployWaitsForExternalDependency(t *testing.T) {
	ns, extNS := namespace(t), namespace(t)
	ctx := context.Background()
	cs := clientset(t)
	createNamespace(t, cs, extNS)

	bg := sealaneBackground(t, t.TempDir(), "deploy", "test/e2e/testdata/extdep", "--release", "ext", "--namespace", ns,
		"--set", "externalNamespace="+extNS, "--timeout", "4m", "-o", "json")
	waitingFor := func(ctx context.Context) bool {
		for _, line := range strings.Split(bg.output(), "\n") {
			if strings.Contains(line, string(events.ResourceProgressed)) && strings.Contains(line, `"name":"ext-db"`) {
				return true
			}
		}
		return false
	}
	if !eventually(ctx, 2*time.Minute, waitingFor) {
		t.Fatalf("the deploy never reported waiting for ext-db (exited: %v):\n%s", bg.exited(), bg.output())
	}
	stillBlocked := func(when string) {
		t.Helper()
		time.Sleep(3 * time.Second)
		if bg.exited() {
			t.Fatalf("%s: the deploy ended while ext-db was not ready:\n%s", when, bg.output())
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "needs-ext", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: needs-ext applied while ext-db was not ready (get: %v)", when, err)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "first", metav1.GetOptions{}); err != nil {
			t.Errorf("%s: ConfigMap first, which has no external dependency, is not applied: %v", when, err)
		}
	}
	stillBlocked("ext-db absent")

	if _, err := cs.AppsV1().Deployments(extNS).Create(ctx, externalDeployment("ext-db", true), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !eventually(ctx, time.Minute, func(ctx context.Context) bool {
		d, err := cs.AppsV1().Deployments(extNS).Get(ctx, "ext-db", metav1.GetOptions{})
		return err == nil && d.Status.Replicas == 1 && d.Status.ReadyReplicas == 0 && d.Status.ObservedGeneration == d.Generation
	}) {
		t.Fatal("ext-db never got its unready pod")
	}
	stillBlocked("ext-db not ready")

	// Make it ready: a pod template without the unready label rolls out a ready pod.
	d, err := cs.AppsV1().Deployments(extNS).Get(ctx, "ext-db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(d.Spec.Template.Labels, "sealane.dev/test-unready")
	if _, err := cs.AppsV1().Deployments(extNS).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := bg.wait(t, 3*time.Minute)
	if r.code != 0 {
		t.Fatalf("deploy exit %d after ext-db became ready:\n%s", r.code, r.out)
	}
	l := parseEvents(t, r.out)
	waiting, ok := l.firstState("Deployment", "ext-db", events.StateWaiting)
	if !ok {
		t.Errorf("no WAITING report for ext-db: %v", l.states)
	}
	extReady := l.ready(t, "Deployment", "ext-db")
	needsExt := l.apply(t, "ConfigMap", "needs-ext")
	if waiting.seq >= extReady.seq {
		t.Errorf("ext-db: %v not before %v", waiting, extReady)
	}
	readyBefore(t, "external dependency ext-db", extReady, needsExt)
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "needs-ext", metav1.GetOptions{}); err != nil {
		t.Errorf("needs-ext after the deploy: %v", err)
	}
	if hist := helmHistory(t, ns, "ext"); len(hist) != 1 || hist[0].Status != "deployed" {
		t.Errorf("helm history = %+v, want revision 1 deployed", hist)
	}
}
