package recorder

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/lease"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/stage"
)

// TestRecorderFencesWrites: the recorder renews the lease before each write; with the lease
// lost it writes nothing: no uninstalling mark, no namespace, no uninstall result.
func TestRecorderFencesWrites(t *testing.T) {
	t.Run("uninstalling mark", func(t *testing.T) {
		e := pipelinetest.NewEnv(t)
		pipelinetest.RecordRevision(t, e.Store(), 1, "deployed")
		token := e.Acquire("a", 0)
		e.TakeOver("b")
		st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: 1, Operation: events.OperationUninstall, LeaseToken: token}
		out, err := (&Recorder{e.Deps()}).Handle(pipelinetest.Context(t), pipelinetest.Input(t, events.DeployRendered, "a",
			events.RenderedData{Target: pipelinetest.Target, Revision: 1, Operation: events.OperationUninstall}, st))
		if err != nil || !strings.Contains(pipelinetest.FailedReason(out), "deploy b holds it now") {
			t.Fatalf("pending = %+v, %v; want the deploy failed", out, err)
		}
		if got := pipelinetest.Status(t, e.Store(), 1); got != "deployed" {
			t.Errorf("revision 1 is %s, want deployed (not marked)", got)
		}
	})
	t.Run("namespace", func(t *testing.T) {
		e := pipelinetest.NewEnv(t)
		archive := pipelinetest.ChartArchive(t)
		chartRef := pipelinetest.PutBlob(t, e.Blobs, "charts/web", archive)
		renderRef := pipelinetest.PutBlob(t, e.Blobs, "renders/a", []byte(`{"manifest":""}`))
		token := e.Acquire("a", 0)
		e.TakeOver("b")
		st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: 1, LeaseToken: token}
		out, err := (&Recorder{e.Deps()}).Handle(pipelinetest.Context(t), pipelinetest.Input(t, events.DeployRendered, "a",
			events.RenderedData{Target: pipelinetest.Target, Revision: 1, RenderRef: renderRef, Chart: events.ChartSource{Name: "web", Ref: chartRef}}, st))
		if err != nil || !strings.Contains(pipelinetest.FailedReason(out), "deploy b holds it now") {
			t.Fatalf("pending = %+v, %v; want the deploy failed", out, err)
		}
		if nss, _ := e.Typed.CoreV1().Namespaces().List(pipelinetest.Context(t), metav1.ListOptions{}); len(nss.Items) != 0 {
			t.Errorf("namespaces %v created without the lease", nss.Items)
		}
	})
	for _, ok := range []bool{true, false} {
		t.Run(fmt.Sprintf("uninstall result, succeeded %v", ok), func(t *testing.T) {
			e := pipelinetest.NewEnv(t)
			s := e.Store()
			pipelinetest.RecordRevision(t, s, 1, "deployed")
			if _, err := s.MarkUninstalling(pipelinetest.Context(t), pipelinetest.Target.Release); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Typed.CoreV1().Namespaces().Create(pipelinetest.Context(t), pipelinetest.Namespace(pipelinetest.Target.Namespace), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			token := e.Acquire("a", 0)
			e.TakeOver("b")
			st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: 1, Operation: events.OperationUninstall, WithNamespace: true, LeaseToken: token}
			var in stage.Input
			if ok {
				in = pipelinetest.Input(t, events.DeploySucceeded, "a", events.SucceededData{Target: pipelinetest.Target, Revision: 1}, st)
			} else {
				in = pipelinetest.Input(t, events.DeployFailed, "a", events.FailedData{Target: pipelinetest.Target, Revision: 1, Reason: "boom"}, st)
			}
			_, err := (&Recorder{e.Deps()}).Handle(pipelinetest.Context(t), in)
			var lost *lease.LostError
			if !errors.As(err, &lost) {
				t.Fatalf("recorder = %v, want the lost lease", err)
			}
			if got := pipelinetest.Status(t, s, 1); got != "uninstalling" {
				t.Errorf("revision 1 is %s, want left uninstalling", got)
			}
			if _, err := e.Typed.CoreV1().Namespaces().Get(pipelinetest.Context(t), pipelinetest.Target.Namespace, metav1.GetOptions{}); err != nil {
				t.Errorf("namespace: %v, want kept", err)
			}
		})
	}
}

// TestRecordPendingRevisionTaken: a revision number that is no longer the next one fails the
// deploy at once instead of being retried.
func TestRecordPendingRevisionTaken(t *testing.T) {
	e := pipelinetest.NewEnv(t)
	s := e.Store()
	pipelinetest.RecordRevision(t, s, 1, "deployed")
	pipelinetest.RecordRevision(t, s, 2, "deployed") // written meanwhile by another writer
	chartRef := pipelinetest.PutBlob(t, e.Blobs, "charts/web", pipelinetest.ChartArchive(t))
	renderRef := pipelinetest.PutBlob(t, e.Blobs, "renders/a", []byte(`{"manifest":""}`))
	token := e.Acquire("a", 0)
	st := &deploy.State{ID: "a", Target: pipelinetest.Target, Revision: 4, LeaseToken: token}
	out, err := (&Recorder{e.Deps()}).Handle(pipelinetest.Context(t), pipelinetest.Input(t, events.DeployRendered, "a",
		events.RenderedData{Target: pipelinetest.Target, Revision: 4, RenderRef: renderRef, Chart: events.ChartSource{Name: "web", Ref: chartRef}}, st))
	if err != nil || !strings.Contains(pipelinetest.FailedReason(out), "the next revision is 3") {
		t.Fatalf("pending = %+v, %v; want the deploy failed", out, err)
	}
}
