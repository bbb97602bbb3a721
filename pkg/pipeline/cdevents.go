package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/stage"
)

// cdEventStep is the step of the CDEvents emit: its event id is "<deploy id>.cdevent".
const cdEventStep = "cdevent"

// recorderSource is the CloudEvents source of the recorder's events (see stage.build).
const recorderSource = "/sealane/recorder"

// withCDEvent adds the CDEvents service event of a deploy that ended well to emits, just
// before its release_recorded, which stays the last event of the deploy: a consumer that saw
// release_recorded finds the CDEvent already stored. Nothing is added for a failure, an
// up-to-date deploy, a test run or a plan. The chart is read from the recorded revision.
func (r *Recorder) withCDEvent(ctx context.Context, in stage.Input, emits []stage.Emit) ([]stage.Emit, error) {
	i := slices.IndexFunc(emits, func(e stage.Emit) bool { return e.Type == events.ReleaseRecorded })
	if i < 0 {
		return emits, nil
	}
	rec, ok := emits[i].Data.(events.RecordedData)
	if !ok || rec.Outcome != events.OutcomeSucceeded || rec.UpToDate || rec.Revision == 0 || in.State == nil {
		return emits, nil
	}
	svc := events.CDService{ID: events.StepID(in.DeployID, cdEventStep), Source: recorderSource, Time: r.now(), Target: in.Target,
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
		return emits, nil
	}
	if svc.Type != events.CDServiceRemoved {
		cluster, err := r.Clusters.Get(in.Target.Cluster)
		if err != nil {
			return nil, err
		}
		rel, err := releaseStore(cluster, in.Target, storageOf(in.State), r.log()).Get(ctx, in.Target.Release, rec.Revision)
		if errors.Is(err, release.ErrNotFound) || err == nil && (rel.Chart == nil || rel.Chart.Metadata == nil) {
			r.log().Warn("no chart in the release record: no CDEvent", zap.String("release", in.Target.Release), zap.Int("revision", rec.Revision))
			return emits, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s.v%d for its CDEvent: %w", in.Target.Release, rec.Revision, err)
		}
		svc.ChartName, svc.ChartVersion = rel.Chart.Metadata.Name, rel.Chart.Metadata.Version
	}
	payload, err := events.NewCDEvent(svc)
	if err != nil {
		return nil, err
	}
	return slices.Insert(slices.Clone(emits), i, stage.Emit{Type: svc.Type, Step: cdEventStep, Data: payload}), nil
}
