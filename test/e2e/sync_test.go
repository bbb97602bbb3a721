package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/events"
)

// TestReplicasOnCreation deploys a Deployment with werf.io/replicas-on-creation "2" and no
// spec.replicas: it is created with 2 replicas; redeploys leave spec.replicas alone, whether
// nobody touched it or an HPA-like client scaled it to 4 through the scale subresource. The
// deploys alternate apply methods (each sequence starts with a different one).
func TestReplicasOnCreation(t *testing.T) {
	for _, methods := range [][4]string{{"ssa", "ssa", "ssa", "3wm"}, {"3wm", "ssa", "3wm", "ssa"}} {
		t.Run(strings.Join(methods[:], ","), func(t *testing.T) { replicasOnCreation(t, methods) })
	}
}

func replicasOnCreation(t *testing.T, methods [4]string) {
	ns := namespace(t)
	data := t.TempDir()
	ctx := context.Background()
	cs := clientset(t)
	chart := "test/e2e/testdata/oncreation"
	step := 0
	deploy := func(message string) {
		t.Helper()
		method := methods[step]
		step++
		r := sealane(t, data, "deploy", chart, "--release", "scaled", "--namespace", ns, "--set", "message="+message,
			"--apply-method", method, "--timeout", "2m")
		if r.code != 0 {
			t.Fatalf("deploy message=%s --apply-method %s exit %d:\n%s", message, method, r.code, r.out)
		}
		if cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "scaled-config", metav1.GetOptions{}); err != nil || cm.Data["message"] != message {
			t.Fatalf("ConfigMap after the deploy: %v %v, want message=%s", cm.Data, err, message)
		}
	}
	replicas := func(when string, want int32) {
		t.Helper()
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
			t.Errorf("%s: spec.replicas = %v, want %d", when, ptrString(d.Spec.Replicas), want)
		}
	}

	deploy("one")
	replicas("after install", 2)
	deploy("two")
	replicas("after a redeploy nobody scaled between", 2)

	// An HPA scales through the scale subresource with its own field manager.
	sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "scaled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = 4
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "scaled", &autoscalingv1.Scale{ObjectMeta: sc.ObjectMeta, Spec: sc.Spec},
		metav1.UpdateOptions{FieldManager: "e2e-hpa"}); err != nil {
		t.Fatal(err)
	}
	replicas("after scaling", 4)
	deploy("three")
	replicas("after a redeploy", 4)
	deploy("four")
	replicas("after another redeploy", 4)
	if !deploymentReady(ctx, cs, ns, "scaled") {
		t.Errorf("Deployment scaled not ready with 4 replicas after the deploy waited for it")
	}
}

func ptrString(p *int32) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// editByHand changes chart-managed fields as `kubectl edit` would (the ConfigMap's data key and
// annotation, the Deployment's image) and adds fields the chart does not set, as a controller
// would (an annotation on both, a data key).
func editByHand(t *testing.T, cs kubernetes.Interface, ns, round string) {
	t.Helper()
	ctx := context.Background()
	edit := metav1.UpdateOptions{FieldManager: "kubectl-edit"}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "drift-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["key"] = "manual-" + round
	cm.Data["added"] = "by-hand-" + round
	cm.Annotations["example.com/note"] = "manual-" + round
	cm.Annotations["controller.example.com/seen"] = round
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, edit); err != nil {
		t.Fatal(err)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "drift-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Image = "nginx:manual-" + round
	d.Annotations["controller.example.com/seen"] = round
	if _, err := cs.AppsV1().Deployments(ns).Update(ctx, d, edit); err != nil {
		t.Fatal(err)
	}
}

// checkSynchronized checks that the chart's fields are back and the others kept.
func checkSynchronized(t *testing.T, cs kubernetes.Interface, ns, round, method string) {
	t.Helper()
	ctx := context.Background()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "drift-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["key"] != "chart" || cm.Data["other"] != "untouched" || cm.Annotations["example.com/note"] != "chart" {
		t.Errorf("%s: ConfigMap chart fields not reverted: data %v, annotations %v", method, cm.Data, cm.Annotations)
	}
	if cm.Annotations["controller.example.com/seen"] != round || cm.Data["added"] != "by-hand-"+round {
		t.Errorf("%s: ConfigMap fields the chart does not set were not kept: data %v, annotations %v", method, cm.Data, cm.Annotations)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "drift-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
		t.Errorf("%s: Deployment image %q, want the chart's nginx:1.27", method, img)
	}
	if d.Annotations["controller.example.com/seen"] != round {
		t.Errorf("%s: Deployment annotation added by hand not kept: %v", method, d.Annotations)
	}
	if d.Annotations["meta.helm.sh/release-name"] != "drift" {
		t.Errorf("%s: Deployment lost its release annotations: %v", method, d.Annotations)
	}
}

// TestManualEditReverted installs with one apply method, edits chart-managed fields by hand
// and adds others, and redeploys the same chart: first with the same method, then after
// another edit with the other one. Each time the chart's fields are reverted and the added ones
// kept (werf's synchronized-resource rule).
func TestManualEditReverted(t *testing.T) {
	for _, tc := range []struct{ first, second string }{{"ssa", "3wm"}, {"3wm", "ssa"}} {
		t.Run(tc.first, func(t *testing.T) {
			ns := namespace(t)
			data := t.TempDir()
			cs := clientset(t)
			deploy := func(method string) {
				t.Helper()
				r := sealane(t, data, "deploy", "test/e2e/testdata/drift", "--release", "drift", "--namespace", ns, "--apply-method", method, "--timeout", "2m")
				if r.code != 0 {
					t.Fatalf("deploy --apply-method %s exit %d:\n%s", method, r.code, r.out)
				}
			}
			deploy(tc.first)
			for i, method := range []string{tc.first, tc.second} {
				round := fmt.Sprint(i + 1)
				editByHand(t, cs, ns, round)
				deploy(method)
				checkSynchronized(t, cs, ns, round, method)
			}
		})
	}
}

// TestImmutableJobRecreated changes the pod template of a (non-hook) Job between deploys:
// the template is immutable, so the Job is deleted and created again (a new UID) and the
// deploy waits for the new one to complete; an unchanged Job is left alone. Both apply methods.
func TestImmutableJobRecreated(t *testing.T) {
	for _, method := range []string{"ssa", "3wm"} {
		t.Run(method, func(t *testing.T) { immutableJobRecreated(t, method) })
	}
}

func immutableJobRecreated(t *testing.T, method string) {
	ns := namespace(t)
	data := t.TempDir()
	ctx := context.Background()
	cs := clientset(t)
	deploy := func(run string) *eventLog {
		t.Helper()
		r := sealane(t, data, "deploy", "test/e2e/testdata/immutable", "--release", "job", "--namespace", ns, "--set", "run="+run,
			"--apply-method", method, "--timeout", "2m", "-o", "json")
		if r.code != 0 {
			t.Fatalf("deploy run=%s exit %d:\n%s", run, r.code, r.out)
		}
		return parseEvents(t, r.out)
	}
	job := func() (uid string, run string, succeeded int32) {
		t.Helper()
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return string(j.UID), j.Spec.Template.Labels["run"], j.Status.Succeeded
	}

	deploy("a")
	uidA, run, ok := job()
	if run != "a" || ok != 1 {
		t.Fatalf("Job after install: run %q, succeeded %d", run, ok)
	}

	l := deploy("b")
	if a := l.apply(t, "Job", "once"); a.action != events.ActionRecreated {
		t.Errorf("Job with a changed template: %v, want recreated", a)
	}
	l.ready(t, "Job", "once")
	uidB, run, ok := job()
	if uidB == uidA {
		t.Errorf("Job UID unchanged (%s): not recreated", uidA)
	}
	if run != "b" || ok != 1 {
		t.Errorf("recreated Job: run %q, succeeded %d; want run b completed", run, ok)
	}
	if cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "beside", metav1.GetOptions{}); err != nil || cm.Data["run"] != "b" {
		t.Errorf("ConfigMap beside the Job: %v %v", cm.Data, err)
	}
	if hist := helmHistory(t, ns, "job"); len(hist) != 2 || hist[1].Status != "deployed" {
		t.Errorf("helm history = %+v, want revision 2 deployed", hist)
	}

	// The same again: the Job is left alone (reported unchanged, or the whole release is up to
	// date and nothing is applied at all).
	l = deploy("b")
	if a, ok := l.find("Job", "once"); ok && a.action != events.ActionUnchanged {
		t.Errorf("unchanged Job: %v, want unchanged", a)
	}
	if uid, _, _ := job(); uid != uidB {
		t.Errorf("unchanged Job recreated: UID %s → %s", uidB, uid)
	}
}
