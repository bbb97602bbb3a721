package recorder

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"
	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// cdEventStep is the step of the CDEvents emit: its event id is "<deploy id>.cdevent".
const cdEventStep = "cdevent"

// recorderSource is the CloudEvents source of the recorder's events (see stage.build).
const recorderSource = "/sealane/recorder"

// withCDEvent adds the CDEvent of a deploy that ended to emits, just before its
// release_recorded, which stays the last event of the deploy: a consumer that saw
// release_recorded finds the CDEvent already stored. A deploy that ended well gets its service
// event (cdServiceEvent); a failed deploy, rollback or uninstall a pipelinerun.finished with
// outcome "failure" (cdFailureEvent). Nothing is added for an up-to-date deploy, a test run or
// a plan.
// chart, when known, is the recorded revision's chart (read from the record otherwise).
func (r *Recorder) withCDEvent(ctx context.Context, in stage.Input, emits []stage.Emit, chart *helmchart.Metadata) ([]stage.Emit, error) {
	i := slices.IndexFunc(emits, func(e stage.Emit) bool { return e.Type == events.ReleaseRecorded })
	if i < 0 || in.State == nil {
		return emits, nil
	}
	rec, ok := emits[i].Data.(events.RecordedData)
	if !ok {
		return emits, nil
	}
	var e *stage.Emit
	var err error
	switch rec.Outcome {
	case events.OutcomeSucceeded:
		e, err = r.cdServiceEvent(ctx, in, rec, chart)
	case events.OutcomeFailed:
		e, err = r.cdFailureEvent(in, rec)
	}
	if err != nil || e == nil {
		return emits, err
	}
	return slices.Insert(slices.Clone(emits), i, *e), nil
}

// cdFailureEvent is the pipelinerun.finished (outcome "failure") of a failed deploy, rollback
// or uninstall; nil for a failed test run or plan.
func (r *Recorder) cdFailureEvent(in stage.Input, rec events.RecordedData) (*stage.Emit, error) {
	switch in.State.Operation {
	case events.OperationDeploy, events.OperationRollback, events.OperationUninstall, "":
	default:
		return nil, nil
	}
	payload, err := events.NewCDPipelineRunFinished(events.CDPipelineRun{ID: events.StepID(in.DeployID, cdEventStep),
		Source: recorderSource, Time: r.Now(), DeployID: in.DeployID, Operation: in.State.Operation, Target: in.Target,
		Reason: rec.Reason, RequestedBy: in.State.RequestedBy, RequestedByVerified: in.State.RequestedByVerified})
	if err != nil {
		return nil, err
	}
	return &stage.Emit{Type: events.CDPipelineRunFinished, Step: cdEventStep, Data: payload}, nil
}

// cdServiceEvent is the service event of a deploy that ended well; nil for an up-to-date
// deploy, a test run, a plan or a revision without a chart. The chart is chart, else read from
// the recorded revision.
func (r *Recorder) cdServiceEvent(ctx context.Context, in stage.Input, rec events.RecordedData, chart *helmchart.Metadata) (*stage.Emit, error) {
	if rec.UpToDate || rec.Revision == 0 {
		return nil, nil
	}
	svc := events.CDService{ID: events.StepID(in.DeployID, cdEventStep), Source: recorderSource, Time: r.Now(), Target: in.Target,
		RequestedBy: in.State.RequestedBy, RequestedByVerified: in.State.RequestedByVerified}
	switch in.State.Operation {
	case events.OperationUninstall:
		svc.Type = events.CDServiceRemoved
	case events.OperationRollback:
		svc.Type = events.CDServiceRolledBack
	case events.OperationDeploy, "":
		svc.Type = events.CDServiceUpgraded
		if rec.Revision == 1 {
			svc.Type = events.CDServiceDeployed
		}
	default: // test, plan: the release did not change
		return nil, nil
	}
	if svc.Type != events.CDServiceRemoved && chart != nil {
		svc.ChartName, svc.ChartVersion = chart.Name, chart.Version
	} else if svc.Type != events.CDServiceRemoved {
		name, version, found, err := r.recordedChart(ctx, in, rec.Revision)
		if err != nil || !found {
			return nil, err
		}
		svc.ChartName, svc.ChartVersion = name, version
	}
	payload, err := events.NewCDEvent(svc)
	if err != nil {
		return nil, err
	}
	return &stage.Emit{Type: svc.Type, Step: cdEventStep, Data: payload}, nil
}

// recordedChart reads the chart name and version of a recorded revision; found is false when
// the record or its chart is missing.
func (r *Recorder) recordedChart(ctx context.Context, in stage.Input, revision int) (name, version string, found bool, err error) {
	cluster, err := r.Clusters.Get(in.Target.Cluster)
	if err != nil {
		return "", "", false, err
	}
	rel, err := stagekit.ReleaseStore(cluster, in.Target, stagekit.StorageOf(in.State), in.Logger(r.Logger())).Get(ctx, in.Target.Release, revision)
	if errors.Is(err, release.ErrNotFound) || err == nil && (rel.Chart == nil || rel.Chart.Metadata == nil) {
		in.Logger(r.Logger()).Warn("no chart in the release record: no CDEvent", zap.Int("revision", revision))
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("read %s.v%d for its CDEvent: %w", in.Target.Release, revision, err)
	}
	return rel.Chart.Metadata.Name, rel.Chart.Metadata.Version, true, nil
}
