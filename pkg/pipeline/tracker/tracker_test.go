package tracker

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
)

// trackerObject is a live object of the fake cluster, from its JSON.
func trackerObject(t *testing.T, js string) runtime.Object {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestTrackerOutcomes runs the tracker as a function on a fake cluster (informers over the
// fake dynamic client): phase_applied with its waits becomes phase_tracked — Ready when every
// blocking wait is met; with a failure naming the resource and the kind's reason when a rule
// fails it; with "not ready" failures when the deploy's deadline has passed.
func TestTrackerOutcomes(t *testing.T) {
	const ready = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","namespace":"shop","generation":1,"uid":"u1"},
		"spec":{"replicas":0,"selector":{"matchLabels":{"app":"app"}}},
		"status":{"observedGeneration":1,"replicas":0,"updatedReplicas":0,"availableReplicas":0,
		"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}`
	const stuck = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"app","namespace":"shop","generation":2,"uid":"u1"},
		"spec":{"replicas":0,"selector":{"matchLabels":{"app":"app"}}},
		"status":{"observedGeneration":2,"replicas":0,
		"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded","message":"took too long"}]}}`
	const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"shop"}}`
	deployment := events.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "app"}
	configMap := events.ResourceRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "web"}
	tests := []struct {
		name     string
		live     []string
		waits    []events.Wait
		deadline time.Duration // from now
		ready    bool
		failures []string // "<resource name>: <reason part>"
	}{
		{"all ready", []string{ready, cm}, []events.Wait{{Resource: deployment}, {Resource: configMap, Until: "present"}}, time.Minute, true, nil},
		{"absent as waited for", nil, []events.Wait{{Resource: configMap, Until: "absent"}}, time.Minute, true, nil},
		{"a rule fails it", []string{stuck}, []events.Wait{{Resource: deployment}}, time.Minute, false,
			[]string{"app: progress deadline exceeded: took too long"}},
		{"deadline passed", []string{cm}, []events.Wait{{Resource: deployment}}, -time.Second, false, []string{"app: not ready"}},
		// Non-blocking: tracked while something blocking is awaited; the ConfigMap is there at
		// once, so the phase ends before the Deployment's pods are even listed.
		{"non-blocking does not hold the phase", []string{stuck, cm}, []events.Wait{{Resource: configMap}, {Resource: deployment, NonBlocking: true}},
			time.Minute, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, js := range tt.live {
				objs = append(objs, trackerObject(t, js))
			}
			e := pipelinetest.NewEnv(t)
			e.Dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				{Version: "v1", Resource: "configmaps"}:                 "ConfigMapList",
				{Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
				{Group: "apps", Version: "v1", Resource: "replicasets"}: "ReplicaSetList",
				{Version: "v1", Resource: "pods"}:                       "PodList",
				{Version: "v1", Resource: "events"}:                     "EventList",
			}, objs...)
			e.Cluster.Dynamic = e.Dyn
			mapper := meta.NewDefaultRESTMapper(nil)
			for _, gvk := range []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}, {Version: "v1", Kind: "Pod"}, {Version: "v1", Kind: "Event"},
				{Group: "apps", Version: "v1", Kind: "Deployment"}, {Group: "apps", Version: "v1", Kind: "ReplicaSet"}} {
				mapper.Add(gvk, meta.RESTScopeNamespace)
			}
			e.Cluster.Mapper = pipelinetest.ResettableMapper{RESTMapper: mapper}
			token := e.Acquire("a", 0)
			st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: 1, LeaseToken: token}
			in := pipelinetest.Input(t, events.PhaseApplied, "a", events.PhaseAppliedData{Target: pipelinetest.Target, Revision: 1, Phase: 0, Phases: 1,
				Waits: tt.waits, Deadline: time.Now().Add(tt.deadline)}, st)
			out, err := (&Tracker{e.Deps()}).Handle(pipelinetest.Context(t), in)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Emits) != 1 || out.Emits[0].Type != events.PhaseTracked {
				t.Fatalf("emitted %v, want one phase_tracked", pipelinetest.Emitted(out))
			}
			d := out.Emits[0].Data.(events.PhaseTrackedData)
			if d.Ready != tt.ready || len(d.Failures) != len(tt.failures) {
				t.Fatalf("phase_tracked = ready %v, failures %+v; want ready %v, failures %v", d.Ready, d.Failures, tt.ready, tt.failures)
			}
			for i, want := range tt.failures {
				name, reason, _ := strings.Cut(want, ": ")
				if d.Failures[i].Resource.Name != name || !strings.Contains(d.Failures[i].Reason, reason) {
					t.Errorf("failure %d = %s: %q, want %s: …%s…", i, d.Failures[i].Resource.Name, d.Failures[i].Reason, name, reason)
				}
			}
		})
	}
}
