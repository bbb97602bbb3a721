package progress

import (
	"testing"
	"time"

	"github.com/sealane/sealane/events"
)

// Line states each stage event in one line (hand-written expectations: what the user reads).
func TestLine(t *testing.T) {
	cm := ref("ConfigMap", "settings")
	web := ref("Deployment", "web")
	chart := events.ChartSource{Name: "shop", Version: "1.2.0"}
	tests := []struct {
		name string
		typ  events.Type
		data any
		want string
	}{
		{"install requested", events.DeployRequested, events.RequestedData{Target: target, Chart: chart},
			"requested: chart shop 1.2.0 → release shop, namespace shop, cluster kind-sandbox"},
		{"rollback to a revision", events.DeployRequested, events.RequestedData{Target: target, Operation: events.OperationRollback, RollbackTo: 3},
			"requested: rollback to revision 3 → release shop, namespace shop, cluster kind-sandbox"},
		{"rollback to the deployed revision", events.DeployRequested, events.RequestedData{Target: target, Operation: events.OperationRollback, RollbackToDeployed: true},
			"requested: rollback to the last deployed revision → release shop, namespace shop, cluster kind-sandbox"},
		{"uninstall requested", events.DeployRequested, events.RequestedData{Target: target, Operation: events.OperationUninstall},
			"requested: uninstall → release shop, namespace shop, cluster kind-sandbox"},
		{"upgrade rendered with a warning", events.DeployRendered, events.RenderedData{Revision: 4, IsUpgrade: true, Resources: []events.ResourceRef{cm, web}, Warnings: []string{"careful"}},
			"rendered: 2 resources, revision 4 (upgrade)\n  careful"},
		{"rendered with a description", events.DeployRendered, events.RenderedData{Revision: 5, Description: "Rollback to 3"},
			"rendered: 0 resources, revision 5 (rollback to 3)"},
		{"uninstall planned", events.DeployRendered, events.RenderedData{Revision: 5, Operation: events.OperationUninstall, Warnings: []string{"kept: pvc/data"}},
			"planned: uninstall of revision 5\n  kept: pvc/data"},
		{"test run requested", events.DeployRequested, events.RequestedData{Target: target, Operation: events.OperationTest},
			"requested: test run → release shop, namespace shop, cluster kind-sandbox"},
		{"started", events.DeployStarted, events.StartedData{Revision: 4}, "started: revision 4 recorded as pending"},
		{"applied", events.PhaseApplied, events.PhaseAppliedData{Phase: 0, Phases: 2,
			Applied: []events.AppliedResource{{Resource: cm, Action: events.ActionUnchanged}, {Resource: web, Action: events.ActionConfigured}, {Resource: cm, Action: events.ActionDeleted}},
			Waits:   []events.Wait{{Resource: web}}},
			"applied phase 1/2: 0 created, 1 configured, 1 unchanged, 1 deleted; waiting for 1\n    unchanged   " + cm.String() + "\n    configured  " + web.String() + "\n    deleted     " + cm.String()},
		{"nothing applied", events.PhaseApplied, events.PhaseAppliedData{Phase: 1, Phases: 2}, "applied phase 2/2: nothing to apply"},
		{"progressed", events.ResourceProgressed, events.ProgressedData{Resource: web, State: events.StateWaiting, Ready: 1, Desired: 2, Message: "1/2 replicas available"},
			"  WAITING  " + web.String() + " 1/2  1/2 replicas available"},
		{"tracked", events.PhaseTracked, events.PhaseTrackedData{Phase: 0, Phases: 1, Ready: true}, "tracked phase 1/1: all resources ready"},
		{"tracked with failures", events.PhaseTracked, events.PhaseTrackedData{Phase: 0, Phases: 1, Failures: []events.ResourceFailure{{Resource: web}}},
			"tracked phase 1/1: 1 resource(s) failed"},
		{"succeeded", events.DeploySucceeded, events.SucceededData{}, "succeeded"},
		{"up to date", events.DeploySucceeded, events.SucceededData{UpToDate: true}, "up to date: nothing to change, no new revision"},
		{"failed", events.DeployFailed, events.FailedData{Stage: events.StageTracker, Reason: "web not ready"}, "FAILED at tracker: web not ready"},
		{"webhook accepted", events.WebhookAccepted, events.WebhookData{Receiver: "shop", Provider: "github", Status: 202, Repository: "acme/shop",
			Ref: "refs/heads/main", Commit: "0123456789abcdef0123456789abcdef01234567", Sender: "alice", DeliveryID: "d-1", DeployID: "u-1"},
			"webhook accepted: github receiver shop, HTTP 202, acme/shop refs/heads/main at 0123456 by alice, delivery d-1 → deploy u-1"},
		{"webhook rejected", events.WebhookRejected, events.WebhookData{Receiver: "shop", Provider: "github", Status: 401, Reason: "signature"},
			"webhook rejected: github receiver shop, HTTP 401: signature"},
		{"webhook refusals summed up", events.WebhookRejected, events.WebhookData{Refused: &events.WebhookRefused{
			Since: time.Unix(0, 0), Until: time.Unix(60, 0), Total: 12,
			Counts:  []events.WebhookRefusedCount{{Receiver: "shop", Reason: "signature", Status: 401, Count: 10}, {Receiver: "(unknown)", Reason: "unknown receiver", Status: 404, Count: 2}},
			Sources: []events.WebhookSourceCount{{Addr: "203.0.113.9", Count: 11}}}},
			"webhook refused 12 request(s) in 1m0s: shop signature 10×401, (unknown) unknown receiver 2×404; most from 203.0.113.9 (11)"},
		{"git chart requested", events.DeployRequested, events.RequestedData{Chart: events.ChartSource{Git: &events.GitChart{URL: "https://git.example.com/acme/shop.git",
			Commit: "0123456789abcdef0123456789abcdef01234567"}}, Target: events.Target{Cluster: "c", Namespace: "n", Release: "r"}},
			"requested: chart . in https://git.example.com/acme/shop.git at 0123456 → release r, namespace n, cluster c"},
		{"queued", events.DeployQueued, events.QueuedData{Target: target, Holder: "d0", Position: 2, Superseded: []string{"d5"}},
			"queued behind deploy d0 (release shop is busy), position 2; superseded the queued deploys d5"},
		{"log lines", events.LogLines, events.LogLinesData{Resource: web, Pod: "web-1", Container: "app", Lines: make([]events.LogLine, 3), Dropped: 1},
			"logs: " + web.String() + ", pod web-1, container app: 3 line(s), 1 dropped"},
		{"recorded", events.ReleaseRecorded, events.RecordedData{Target: target, Revision: 4, Status: "deployed"}, "release shop revision 4: deployed"},
		{"recorded up to date", events.ReleaseRecorded, events.RecordedData{Target: target, Revision: 4, Status: "deployed", UpToDate: true},
			"release shop revision 4: deployed, up to date"},
		{"nothing recorded", events.ReleaseRecorded, events.RecordedData{Target: target}, "release shop: no revision written"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(build(t, i, step{typ: tt.typ, data: tt.data})); got != tt.want {
				t.Errorf("Line:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
