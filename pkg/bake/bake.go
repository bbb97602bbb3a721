package bake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"go.uber.org/zap"
	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/readiness"
	"github.com/sealane/sealane/pkg/release"
	"github.com/sealane/sealane/pkg/track"
)

// Baker is the tracker's bake (fleet rollouts): it keeps watching one cluster's released
// workloads of a revision until a time and says whether they stayed healthy, by the rules of
// readiness.Bake. A cluster it cannot watch makes the bake undecided, never passed.
type Baker struct {
	// Clusters gives the clients of the cluster a bake watches; one that also reports
	// reachability (clusters.Registry) has its answer checked first.
	Clusters Clusters
	Log      *zap.Logger
	Clock    func() time.Time
	// Rules tune the verdict (zero: readiness.DefaultBakeGrace, no restart allowed).
	Rules readiness.BakeRules
	// Unreachable is how long calls to the cluster may keep failing before the bake is
	// undecided (default DefaultUnreachable).
	Unreachable time.Duration
	// Probe is how often the cluster is asked whether it answers while the bake watches it
	// (default DefaultProbe); each probe has that long to answer.
	Probe time.Duration
	// Tick is how often the workloads are judged again without news (default 1s).
	Tick time.Duration
}

// Clusters gives the clients of a registered cluster (clusters.Registry, kube clients of a
// kubeconfig context).
type Clusters interface {
	Get(name string) (*kube.Cluster, error)
}

// reachability is what a Clusters may add: whether a cluster answered its last check.
type reachability interface {
	Reachable(ctx context.Context, name string) error
}

func (b *Baker) now() time.Time {
	if b.Clock == nil {
		return time.Now()
	}
	return b.Clock()
}

func (b *Baker) log() *zap.Logger {
	if b.Log == nil {
		return zap.NewNop()
	}
	return b.Log
}

// Bake defaults.
const (
	DefaultUnreachable = 30 * time.Second
	DefaultProbe       = 5 * time.Second
)

func (b *Baker) unreachable() time.Duration {
	if b.Unreachable > 0 {
		return b.Unreachable
	}
	return DefaultUnreachable
}

// Request is one bake to run: the request's payload and when the bake started (the
// request event's time).
type Request struct {
	events.BakeRequestedData
	Started time.Time
}

// Bake runs one bake and returns the BakeFinished payload. It returns an error only when ctx
// ends before a verdict (the request is then handled again, bakes until the same Until). A
// request whose Until has passed is decided from the workloads' current state.
func (b *Baker) Bake(ctx context.Context, req Request) (events.BakeFinishedData, error) {
	out := events.BakeFinishedData{Target: req.Target, RolloutID: req.RolloutID, Wave: req.Wave, Revision: req.Revision}
	log := b.log().With(zap.String("rollout", req.RolloutID), zap.String("cluster", req.Target.Cluster),
		zap.String("release", req.Target.Release), zap.Int("revision", req.Revision))
	cluster, err := b.reach(ctx, req.Target.Cluster)
	if err != nil {
		return b.undecided(ctx, out, err)
	}
	rel, err := b.record(ctx, cluster, req)
	if errors.Is(err, release.ErrNotFound) {
		return failed(out, err.Error()), nil
	}
	if err != nil {
		return b.undecided(ctx, out, err)
	}
	if rel.Info == nil || rel.Info.Status != helmrelease.StatusDeployed {
		return failed(out, fmt.Sprintf("release %s revision %d is %s, not deployed", req.Target.Release, req.Revision, recordStatus(rel))), nil
	}
	targets, err := bakeTargets(rel.Manifest, req.Target.Namespace)
	if err != nil {
		return failed(out, fmt.Sprintf("release %s revision %d: %v", req.Target.Release, req.Revision, err)), nil
	}
	if len(targets) == 0 {
		out.Passed, out.Reason = true, "no workloads to bake"
		return out, nil
	}
	log.Info("baking", zap.Int("workloads", len(targets)), zap.Time("until", req.Until))
	out, err = b.watch(ctx, cluster, req, targets)
	if err == nil {
		log.Info("baked", zap.Bool("passed", out.Passed), zap.Bool("undecided", out.Undecided), zap.String("reason", out.Reason))
	}
	return out, err
}

// reach returns the cluster's clients, refusing an unknown cluster and one the registry found
// unreachable that still does not answer.
func (b *Baker) reach(ctx context.Context, name string) (*kube.Cluster, error) {
	if r, ok := b.Clusters.(reachability); ok {
		if err := r.Reachable(ctx, name); err != nil {
			return nil, err
		}
	}
	return b.Clusters.Get(name)
}

// undecided is the answer for a cluster that cannot be watched, or ctx's error when the bake
// was stopped instead.
func (b *Baker) undecided(ctx context.Context, out events.BakeFinishedData, err error) (events.BakeFinishedData, error) {
	if ctx.Err() != nil {
		return out, fmt.Errorf("bake %s: %w", out.Target, context.Cause(ctx))
	}
	out.Passed, out.Undecided = false, true
	out.Reason = fmt.Sprintf("cluster %s: cannot watch the bake: %v", out.Target.Cluster, err)
	return out, nil
}

func failed(out events.BakeFinishedData, reason string) events.BakeFinishedData {
	out.Passed, out.Reason = false, reason
	return out
}

func recordStatus(rel *helmrelease.Release) string {
	if rel.Info == nil {
		return "without status"
	}
	return rel.Info.Status.String()
}

// record reads the revision's release record, retrying failed calls for up to the unreachable
// window (each call is bounded by the bounded client's request timeout).
func (b *Baker) record(ctx context.Context, cluster *kube.Cluster, req Request) (*helmrelease.Release, error) {
	store := release.Open(cluster.Bounded(), req.Target, req.ReleaseStorage, b.log())
	give := b.now().Add(b.unreachable())
	delay := 250 * time.Millisecond
	for {
		rel, err := store.Get(ctx, req.Target.Release, req.Revision)
		if err == nil || errors.Is(err, release.ErrNotFound) || ctx.Err() != nil || !b.now().Before(give) {
			return rel, err
		}
		b.log().Info("read the release record; retrying", zap.String("cluster", cluster.Name), zap.Error(err))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// bakeTargets are the workloads of a release manifest (objects with pods, and Pods), in ns
// when they name no namespace.
func bakeTargets(text, ns string) ([]track.Target, error) {
	objs, err := manifest.Parse(text)
	if err != nil {
		return nil, err
	}
	var out []track.Target
	for _, o := range objs {
		ref := manifest.RefOf(o.Obj)
		group := ref.GroupVersionKind().Group
		pod := ref.Kind == "Pod" && group == ""
		if !pod && !(readiness.HasPods(ref.Kind) && (group == "apps" || group == "batch" || group == "extensions")) {
			continue
		}
		if ref.Namespace == "" {
			ref.Namespace = ns
		}
		out = append(out, track.Target{Ref: ref, Condition: track.UntilReady})
	}
	return out, nil
}

// bakeReason summarizes a failed verdict.
func bakeReason(fs []events.ResourceFailure) string {
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		parts = append(parts, manifest.Ref{APIVersion: f.Resource.APIVersion, Kind: f.Resource.Kind, Namespace: f.Resource.Namespace, Name: f.Resource.Name}.String()+": "+f.Reason)
	}
	return fmt.Sprintf("%d of the released workloads failed the bake: %s", len(fs), strings.Join(parts, "; "))
}

// RequestEvent is the BakeRequested the rollout coordinator publishes for d: id id (make it
// deterministic, e.g. events.StepID(rolloutID, "bake", wave, cluster, attempt)), the rollout id
// as correlation id and rolloutid extension, pipeline the private pipeline of an embedded
// coordinator ("" for the shared pipeline), and now as its time: the bake's start.
func RequestEvent(id, pipeline string, d events.BakeRequestedData, now time.Time) (cloudevents.Event, error) {
	ev, err := events.New(events.BakeRequested, events.Meta{
		ID: id, Source: "/sealane/rollout", Target: d.Target, CorrelationID: d.RolloutID, Rollout: d.RolloutID,
		Pipeline: pipeline, Time: now,
	}, d)
	if err != nil {
		return ev, fmt.Errorf("bake request %s: %w", id, err)
	}
	return ev, nil
}

// FinishedID is the id of the BakeFinished answering the BakeRequested with id requestID.
func FinishedID(requestID string) string { return requestID + ".finished" }

// FinishedEvent is the tracker's answer d to the bake request req: id
// FinishedID(req.ID()), caused by req, with req's correlation id, rollout and pipeline.
func FinishedEvent(req cloudevents.Event, d events.BakeFinishedData, now time.Time) (cloudevents.Event, error) {
	ev, err := events.New(events.BakeFinished, events.Meta{
		ID: FinishedID(req.ID()), Source: "/sealane/" + string(events.StageTracker), Target: d.Target,
		CorrelationID: events.CorrelationID(req), CausationID: req.ID(), Pipeline: events.PipelineOf(req),
		Rollout: events.RolloutOf(req), Time: now,
	}, d)
	if err != nil {
		return ev, fmt.Errorf("bake answer to %s: %w", req.ID(), err)
	}
	return ev, nil
}
