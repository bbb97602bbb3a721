package progress

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/goleak"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/golden"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	t0     = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	target = events.Target{Cluster: "kind-sandbox", Namespace: "shop", Release: "shop"}
)

func ref(kind, name string) events.ResourceRef {
	av := map[string]string{"Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1"}[kind]
	if av == "" {
		av = "v1"
	}
	return events.ResourceRef{APIVersion: av, Kind: kind, Namespace: "shop", Name: name}
}

// step is an event at an offset from t0, or (event zero) a render at that offset.
type step struct {
	at   time.Duration
	typ  events.Type
	data any
}

func ev(at time.Duration, typ events.Type, data any) step { return step{at: at, typ: typ, data: data} }
func render(at time.Duration) step                        { return step{at: at} }

func build(t *testing.T, i int, s step) cloudevents.Event {
	t.Helper()
	e, err := events.New(s.typ, events.Meta{ID: fmt.Sprintf("d1.%d", i), Source: "/sealane/test",
		Target: target, CorrelationID: "d1", Time: t0.Add(s.at)}, s.data)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// play feeds the steps to a board and returns every render, each under a "=== render at" line.
func play(t *testing.T, color bool, steps []step) string {
	t.Helper()
	b := NewBoard(color)
	var out strings.Builder
	for i, s := range steps {
		if s.typ == "" {
			got := b.Render(t0.Add(s.at))
			if got == "" {
				got = "(nothing)\n"
			}
			fmt.Fprintf(&out, "=== render at +%s\n%s", s.at, got)
			continue
		}
		b.Add(build(t, i, s))
	}
	return out.String()
}

var requested = events.RequestedData{Target: target, Chart: events.ChartSource{Name: "shop", Version: "1.0.0"}}

func applied(phase int, waits ...events.Wait) events.PhaseAppliedData {
	return events.PhaseAppliedData{Target: target, Revision: 2, Phase: phase, Phases: 2, Waits: waits}
}

func progressed(r events.ResourceRef, state events.State, ready, desired int32) events.ProgressedData {
	return events.ProgressedData{Target: target, Revision: 2, Resource: r, State: state, Ready: ready, Desired: desired}
}

func TestBoardReadyWithPods(t *testing.T) {
	web, settings := ref("Deployment", "web"), ref("ConfigMap", "settings")
	waiting := progressed(web, events.StateWaiting, 0, 2)
	waiting.Message = "1 of 2 updated replicas are available"
	waiting.Pods = []events.PodProgress{
		{Name: "web-7c9f8d-abcde", State: events.StateWaiting, Ready: 0, Desired: 1, Message: "ContainerCreating"},
		{Name: "web-7c9f8d-fghij", State: events.StateWaiting, Ready: 0, Desired: 1, Message: "Pending"},
	}
	half := progressed(web, events.StateWaiting, 1, 2)
	half.Pods = []events.PodProgress{
		{Name: "web-7c9f8d-abcde", State: events.StateReady, Ready: 1, Desired: 1, Message: "Running"},
		{Name: "web-7c9f8d-fghij", State: events.StateWaiting, Ready: 0, Desired: 1, Message: "Running"},
	}
	ready := progressed(web, events.StateReady, 2, 2)
	ready.Pods = []events.PodProgress{
		{Name: "web-7c9f8d-abcde", State: events.StateReady, Ready: 1, Desired: 1, Message: "Running"},
		{Name: "web-7c9f8d-fghij", State: events.StateReady, Ready: 1, Desired: 1, Message: "Running", Restarts: 1},
	}
	got := play(t, false, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: settings, Until: "present"}, events.Wait{Resource: web})),
		render(2 * time.Second),
		ev(2*time.Second, events.ResourceProgressed, progressed(settings, events.StateReady, 0, 0)), // no Until: the wait's
		ev(3*time.Second, events.ResourceProgressed, waiting),
		render(5 * time.Second),
		ev(7*time.Second, events.ResourceProgressed, half),
		render(10 * time.Second),
		ev(12*time.Second, events.ResourceProgressed, ready),
		render(15 * time.Second),
		render(20 * time.Second),
	})
	golden.Assert(t, filepath.Join("testdata", "ready-with-pods"+".golden"), got)
}

func crashLoop() events.ProgressedData {
	p := progressed(ref("Deployment", "api"), events.StateFailed, 0, 1)
	p.Errors, p.LastError = 3, `pod api-6d5f7-xk2lp container "app": CrashLoopBackOff: back-off 40s restarting failed container`
	p.Pods = []events.PodProgress{{Name: "api-6d5f7-xk2lp", State: events.StateFailed, Ready: 0, Desired: 1, Restarts: 3, Message: "CrashLoopBackOff"}}
	return p
}

func TestBoardCrashLoop(t *testing.T) {
	api := ref("Deployment", "api")
	got := play(t, false, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: api})),
		ev(30*time.Second, events.ResourceProgressed, crashLoop()),
		render(35 * time.Second),
		render(40 * time.Second), // a FAILED row stays
	})
	golden.Assert(t, filepath.Join("testdata", "crash-loop"+".golden"), got)
}

func TestBoardColor(t *testing.T) {
	api, web, cm := ref("Deployment", "api"), ref("Deployment", "web"), ref("ConfigMap", "settings")
	got := play(t, true, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: api}, events.Wait{Resource: web}, events.Wait{Resource: cm, Until: "present"})),
		ev(2*time.Second, events.ResourceProgressed, progressed(web, events.StateWaiting, 0, 1)),
		ev(2*time.Second, events.ResourceProgressed, progressed(cm, events.StateReady, 0, 0)),
		ev(30*time.Second, events.ResourceProgressed, crashLoop()),
		render(35 * time.Second),
	})
	for _, want := range []string{ansiYellow + "WAITING" + ansiReset, ansiRed + "FAILED" + ansiReset, ansiGreen + "PRESENT" + ansiReset} {
		if !strings.Contains(got, want) {
			t.Errorf("colored render lacks %q", want)
		}
	}
	golden.Assert(t, filepath.Join("testdata", "color"+".golden"), got)
	if plain := play(t, false, []step{ev(0, events.ResourceProgressed, crashLoop()), render(time.Second)}); strings.Contains(plain, "\x1b") {
		t.Errorf("render without color has escape codes:\n%s", plain)
	}
}

func TestBoardConditions(t *testing.T) {
	cm, old, job := ref("ConfigMap", "settings"), ref("Secret", "old-token"), ref("Job", "migrate")
	crd := events.ResourceRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	other := events.ResourceRef{APIVersion: "v1", Kind: "Service", Namespace: "shared", Name: "gateway"}
	jobRunning := progressed(job, events.StateWaiting, 0, 1)
	jobRunning.Until, jobRunning.Message = "complete", "1 active"
	jobRunning.Pods = []events.PodProgress{{Name: "migrate-q8z7w", State: events.StateWaiting, Ready: 1, Desired: 1, Message: "Running"}}
	gone := progressed(old, events.StateReady, 0, 0)
	gone.Until = "absent"
	got := play(t, false, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0,
			events.Wait{Resource: crd, Until: "ready"},
			events.Wait{Resource: old, Until: "absent"},
			events.Wait{Resource: job, Until: "complete"},
			events.Wait{Resource: cm, Until: "present"},
			events.Wait{Resource: other, Until: "present"},
		)),
		ev(2*time.Second, events.ResourceProgressed, jobRunning),
		ev(3*time.Second, events.ResourceProgressed, progressed(crd, events.StateReady, 0, 0)),
		render(5 * time.Second),
		ev(6*time.Second, events.ResourceProgressed, gone),
		render(10 * time.Second),
	})
	golden.Assert(t, filepath.Join("testdata", "conditions"+".golden"), got)
}

func TestBoardNonBlocking(t *testing.T) {
	db, web := ref("StatefulSet", "db"), ref("Deployment", "web")
	dbWaiting := progressed(db, events.StateWaiting, 0, 3)
	dbWaiting.NonBlocking, dbWaiting.Message = true, "partitioned roll out: 0 of 3 pods updated (OnDelete)"
	got := play(t, false, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: db}, events.Wait{Resource: web})),
		ev(2*time.Second, events.ResourceProgressed, dbWaiting),
		ev(3*time.Second, events.ResourceProgressed, progressed(web, events.StateReady, 1, 1)),
		render(5 * time.Second),
		ev(6*time.Second, events.PhaseTracked, events.PhaseTrackedData{Target: target, Revision: 2, Phase: 0, Phases: 1, Ready: true}),
		render(10 * time.Second),
		ev(11*time.Second, events.DeploySucceeded, events.SucceededData{Target: target, Revision: 2}),
		render(15 * time.Second), // the deploy ended and nothing changed: no table
	})
	golden.Assert(t, filepath.Join("testdata", "non-blocking"+".golden"), got)
}

func TestBoardLogs(t *testing.T) {
	web, job := ref("Deployment", "web"), ref("Job", "migrate")
	lines := func(pod, container string, dropped int, texts ...string) events.LogLinesData {
		d := events.LogLinesData{Target: target, Revision: 2, Resource: web, Pod: pod, Container: container, Dropped: dropped}
		for i, s := range texts {
			d.Lines = append(d.Lines, events.LogLine{Time: t0.Add(time.Duration(i) * time.Millisecond), Stream: events.LogStdout, Text: s})
		}
		return d
	}
	jobLogs := events.LogLinesData{Target: target, Revision: 2, Resource: job, Pod: "migrate-q8z7w", Container: "migrate",
		Lines: []events.LogLine{{Time: t0, Stream: events.LogStderr, Text: "applying migration 0042_orders\r\n"}}}
	evs := events.LogLinesData{Target: target, Revision: 2, Resource: web, Pod: "web-7c9f8d-abcde", Lines: []events.LogLine{
		{Time: t0, Stream: events.LogEvent, Text: `Pod/web-7c9f8d-abcde Warning BackOff: Back-off pulling image "shop/web:2"`},
		{Time: t0, Stream: events.LogEvent, Text: "Pod/web-7c9f8d-abcde Normal Pulled: Successfully pulled image \"shop/web:2\" in 1.2s"},
	}}
	got := play(t, false, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: job, Until: "complete"}, events.Wait{Resource: web})),
		ev(2*time.Second, events.LogLines, jobLogs),
		ev(2*time.Second, events.LogLines, lines("web-7c9f8d-abcde", "app", 0, "listening on :8080", "connected to db")),
		ev(3*time.Second, events.LogLines, evs),
		ev(3*time.Second, events.LogLines, events.LogLinesData{Target: target, Revision: 2, Resource: web, Pod: "web-7c9f8d-abcde",
			Lines: []events.LogLine{{Time: t0, Stream: events.LogNotice,
				Text: "pod shop/web-7c9f8d-abcde: logs of containers metrics not shown: too many containers streamed at once (limit 64)"}}}),
		ev(4*time.Second, events.LogLines, lines("web-7c9f8d-abcde", "app", 12, "GET /healthz 200")),
		render(5 * time.Second),
		ev(6*time.Second, events.LogLines, lines("web-7c9f8d-abcde", "app", 0, "GET /healthz 200")),
		ev(6*time.Second, events.LogLines, lines("web-7c9f8d-fghij", "app", 0, "listening on :8080")),
		ev(7*time.Second, events.LogLines, lines("web-7c9f8d-fghij", "app", 3)),
		render(10 * time.Second),
		render(15 * time.Second), // the logs were shown: only the table
	})
	golden.Assert(t, filepath.Join("testdata", "logs"+".golden"), got)
}

func TestBoardFailedDeploy(t *testing.T) {
	web, worker, hook := ref("Deployment", "web"), ref("Deployment", "worker"), ref("Job", "notify")
	webWaiting := progressed(web, events.StateWaiting, 1, 2)
	webWaiting.Message = "1 of 2 updated replicas are available"
	webWaiting.Errors, webWaiting.LastError = 1, "pod web-7c9f8d-fghij: readiness probe failed: HTTP probe failed with statuscode: 503"
	failures := []events.ResourceFailure{
		{Resource: web, Reason: "timed out after 5m0s waiting to be ready: 1 of 2 updated replicas are available"},
		{Resource: hook, Reason: "deleted while the deploy waited for it"},
	}
	got := play(t, false, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: worker}, events.Wait{Resource: web})),
		ev(2*time.Second, events.ResourceProgressed, progressed(worker, events.StateReady, 1, 1)),
		ev(3*time.Second, events.ResourceProgressed, webWaiting),
		render(5 * time.Second),
		render(4*time.Minute + 55*time.Second),
		ev(5*time.Minute, events.PhaseTracked, events.PhaseTrackedData{Target: target, Revision: 2, Phase: 0, Phases: 1, Failures: failures[:1]}),
		ev(5*time.Minute, events.DeployFailed, events.FailedData{Target: target, Revision: 2, Stage: events.StageTracker,
			Reason: "shop/Deployment/web: " + failures[0].Reason, Failures: failures}),
		render(5*time.Minute + time.Second),
		render(5*time.Minute + 5*time.Second), // ended, nothing new
	})
	golden.Assert(t, filepath.Join("testdata", "failed-deploy"+".golden"), got)
}

func TestBoardNewRequestStartsAfresh(t *testing.T) {
	web := ref("Deployment", "web")
	got := play(t, false, []step{
		ev(0, events.DeployRequested, requested),
		ev(time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: ref("ConfigMap", "broken")})),
		ev(2*time.Second, events.DeployFailed, events.FailedData{Target: target, Stage: events.StageTracker, Reason: "x",
			Failures: []events.ResourceFailure{{Resource: ref("ConfigMap", "broken"), Reason: "x"}}}),
		ev(3*time.Second, events.DeployRequested, events.RequestedData{Target: target, Operation: events.OperationRollback}),
		ev(4*time.Second, events.PhaseApplied, applied(0, events.Wait{Resource: web})),
		render(5 * time.Second),
	})
	if strings.Contains(got, "broken") || !strings.Contains(got, "Deployment/web") || !strings.Contains(got, "(2s)") {
		t.Errorf("the rollback's table shows the failed deploy's rows or the wrong start:\n%s", got)
	}
}
