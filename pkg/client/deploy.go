// Package client is the pipeline's client side: it turns a deploy command into a
// deploy.requested event (chart and values in the Object Store) and follows the deploy's
// events until the recorder closes it. The CLI, the webhook and fleet rollouts use it.
package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/chartsource"
	"github.com/sealane/sealane/pkg/tracing"
)

// DeployRequest is a deploy as a person or a webhook asks for it.
type DeployRequest struct {
	// ChartDir is a chart directory, a werf project directory, a .tgz, an oci:// reference or
	// an archive URL; with ChartRepo it is a chart name in that Helm repository.
	ChartDir     string
	ChartRepo    string // Helm repository URL (helm --repo)
	ChartVersion string // exact version or semver constraint of a remote chart
	// ChartSource configures access to remote charts and dependency repositories.
	ChartSource chartsource.Options
	Project     string // default: the chart's name
	Env         string
	Release     string // default: <project>-<env>
	Namespace   string // default: <project>-<env>
	Cluster     string
	ValuesFiles []string
	// SecretValuesFiles are encrypted values files; they are read here and decrypted only by
	// the renderer, which holds the key.
	SecretValuesFiles []string
	Set               []string
	SetString         []string
	SetJSON           []string
	SetFile           []string // KEY=PATH
	SetLiteral        []string
	Timeout           time.Duration
	RequestedBy       string
	Git               *events.Git
	Images            map[string]events.Image
	ImagesRepo        string
	Annotations       map[string]string
	Labels            map[string]string
	ApplyMethod       string // "ssa" (default) or "3wm"
	TakeOwnership     bool
	// Operation is deploy (the default) or plan (a dry run answered by deploy.planned);
	// DiffContextLines sets a plan's diff context (0: default, negative: none).
	Operation        events.Operation
	DiffContextLines int
	// Supersede drops the requests queued for the release behind its current deploy; each is
	// closed as failed ("superseded by deploy <id>").
	Supersede bool
	// ReleaseStorage is where the release records are kept (--release-storage,
	// --release-storage-namespace, --history-max); zero: Secrets in the release namespace.
	ReleaseStorage events.ReleaseStorage
	// ReplyKey is a payload key (payload.GenerateKey) the renderer seals its replies to this
	// request with — the notes, a plan report — so that a client holding only the pipeline's
	// public key reads them; "" asks for none.
	ReplyKey string
}

// Result is how a deploy ended, from its release_recorded event.
type Result struct {
	DeployID string
	events.RecordedData
}

// ErrDeployFailed is returned (wrapped, with the reason) when the pipeline reports a failure.
var ErrDeployFailed = errors.New("deploy failed")

// Deploy publishes a deploy request and calls onEvent for each event of that deploy until the
// recorder closes it. It returns ErrDeployFailed (wrapped with the reason) when the deploy
// failed, and an error naming the input when the request cannot even be built.
func Deploy(ctx context.Context, b *bus.Bus, req DeployRequest, onEvent func(cloudevents.Event)) (Result, error) {
	ev, err := Prepare(ctx, b, req)
	if err != nil {
		return Result{}, err
	}
	return Run(ctx, b, ev, onEvent)
}

// RollbackRequest is a rollback of a release as a person asks for it.
type RollbackRequest struct {
	Target events.Target
	// Revision is the revision to roll back to; 0 is the one before the last.
	Revision    int
	Timeout     time.Duration
	RequestedBy string
}

// Rollback asks the pipeline for a new revision of req.Target made from req.Revision and
// follows it like Deploy.
func Rollback(ctx context.Context, b *bus.Bus, req RollbackRequest, onEvent func(cloudevents.Event)) (Result, error) {
	target, revision := req.Target, req.Revision
	if revision < 0 {
		return Result{}, fmt.Errorf("rollback %s: revision %d: want a positive revision, or none for the previous one", target.Release, revision)
	}
	return Request(ctx, b, events.RequestedData{Target: target, Operation: events.OperationRollback, RollbackTo: revision,
		Timeout: events.Duration(req.Timeout), RequestedBy: req.RequestedBy}, onEvent)
}

// Request publishes a request that needs no chart (a rollback, an uninstall) and follows it
// like Deploy.
func Request(ctx context.Context, b *bus.Bus, data events.RequestedData, onEvent func(cloudevents.Event)) (Result, error) {
	if err := data.Target.Validate(); err != nil {
		return Result{}, err
	}
	deployID := uuid.NewString()
	ev, err := events.New(events.DeployRequested, events.Meta{
		ID: events.StepID(deployID, "requested"), Source: "/sealane/cli", Target: data.Target, CorrelationID: deployID,
	}, data)
	if err != nil {
		return Result{}, err
	}
	return Run(ctx, b, ev, onEvent)
}

// Run publishes a prepared deploy.requested event and calls onEvent for each event of that
// deploy until the recorder closes it, like Deploy.
func Run(ctx context.Context, b *bus.Bus, ev cloudevents.Event, onEvent func(cloudevents.Event)) (res Result, err error) {
	ctx, span := tracing.StartRequest(ctx, "sealane "+events.OperationOf(ev), &ev) // the root of the deploy's trace
	defer func() { tracing.End(span, err) }()
	deployID := events.CorrelationID(ev)
	target, err := events.TargetOf(ev)
	if err != nil {
		return Result{}, err
	}
	res.DeployID = deployID
	followCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &deployWatch{b: b, deployID: deployID, target: target, start: time.Now().Add(-time.Minute), onEvent: onEvent, logs: newLogWaiter()}
	logsDone := w.followLogs(followCtx)
	defer func() { cancel(); <-logsDone }()
	done := w.followEvents(followCtx, &res.RecordedData)
	if err := b.PublishRequest(ctx, ev); err != nil {
		return res, err
	}
	select {
	case err := <-done:
		if err != nil {
			return res, fmt.Errorf("follow deploy %s: %w", deployID, err)
		}
	case <-ctx.Done():
		return res, fmt.Errorf("deploy %s: no final answer from the pipeline: %w", deployID, ctx.Err())
	}
	w.logs.wait(ctx)
	if res.Outcome != events.OutcomeSucceeded {
		return res, fmt.Errorf("%w: %s", ErrDeployFailed, res.Reason)
	}
	return res, nil
}

// deployWatch follows the events and the log lines of one deploy and passes them to onEvent,
// one at a time.
type deployWatch struct {
	b        *bus.Bus
	deployID string
	target   events.Target
	// start is where both follows begin: a minute before Run started.
	start   time.Time
	mu      sync.Mutex
	onEvent func(cloudevents.Event)
	logs    *logWaiter
}

func (w *deployWatch) deliver(e cloudevents.Event) {
	if w.onEvent == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onEvent(e)
}

// followLogs delivers the log lines of the deploy's resources, which come on the log stream,
// as they arrive, until ctx ends; the returned channel is closed when it stops. A missing log
// stream (an older pipeline) only loses them.
func (w *deployWatch) followLogs(ctx context.Context) <-chan struct{} {
	logsDone := make(chan struct{})
	logSubject := events.NATSSubject(events.LogLines, w.target)
	go func() {
		defer close(logsDone)
		_ = w.b.Follow(ctx, bus.FollowOptions{Logs: true, StartTime: w.start, FilterSubjects: []string{logSubject}},
			func(m jetstream.Msg) error {
				if e, err := events.Decode(m.Headers(), m.Data()); err == nil && events.CorrelationID(e) == w.deployID {
					w.deliver(e)
					w.logs.got(e)
				}
				return nil
			})
	}()
	return logsDone
}

// followEvents delivers the deploy's events until its release_recorded event, whose data it
// decodes into rec; the returned channel then receives Follow's result.
func (w *deployWatch) followEvents(ctx context.Context, rec *events.RecordedData) <-chan error {
	done := make(chan error, 1)
	target := w.target
	go func() {
		done <- w.b.Follow(ctx, bus.FollowOptions{
			FilterSubjects: []string{events.Filter{Cluster: target.Cluster, Namespace: target.Namespace, Release: target.Release}.Subject()},
			StartTime:      w.start,
		}, func(m jetstream.Msg) error {
			e, err := events.Decode(m.Headers(), m.Data())
			if err != nil || events.CorrelationID(e) != w.deployID {
				return nil
			}
			w.deliver(e)
			if events.Type(e.Type()) == events.PhaseTracked {
				w.logs.expect(e)
			}
			if events.Type(e.Type()) == events.ReleaseRecorded {
				if err := events.DecodeData(e, rec); err != nil {
					return err
				}
				return bus.ErrStop
			}
			return nil
		})
	}()
	return done
}

// logDrain bounds how long a finished deploy waits for log lines it was told of but has not
// received (the tracker counts the batches of each phase in phase_tracked; in the usual case
// they are all there, or arrive within milliseconds, and nothing waits this long).
const logDrain = 2 * time.Second

// logWaiter knows which log_lines events of a deploy the client received, and how many the
// tracker published per phase (PhaseTrackedData.LogBatches).
type logWaiter struct {
	mu      sync.Mutex
	have    map[int]map[string]bool // phase → event ids received
	want    map[int]int             // phase → batches published
	changed chan struct{}           // closed and replaced on every change
}

func newLogWaiter() *logWaiter {
	return &logWaiter{have: map[int]map[string]bool{}, want: map[int]int{}, changed: make(chan struct{})}
}

// got records a received log_lines event.
func (w *logWaiter) got(e cloudevents.Event) {
	var d events.LogLinesData
	if events.Type(e.Type()) != events.LogLines || events.DecodeData(e, &d) != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.have[d.Phase] == nil {
		w.have[d.Phase] = map[string]bool{}
	}
	w.have[d.Phase][e.ID()] = true
	w.signal()
}

// expect records how many log batches a phase_tracked event says its phase published.
func (w *logWaiter) expect(e cloudevents.Event) {
	var d events.PhaseTrackedData
	if events.DecodeData(e, &d) != nil || d.LogBatches == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.want[d.Phase] = d.LogBatches
	w.signal()
}

func (w *logWaiter) signal() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// wait returns once every phase's log batches were received, or after logDrain.
func (w *logWaiter) wait(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, logDrain)
	defer cancel()
	for {
		w.mu.Lock()
		missing := false
		for phase, n := range w.want {
			missing = missing || len(w.have[phase]) < n
		}
		changed := w.changed
		w.mu.Unlock()
		if !missing {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// Prepare checks the request, stores the packed chart and the values in blobs and returns the
// deploy.requested event (not yet published). Bad input fails here, before anything is sent.
func Prepare(ctx context.Context, blobs Uploads, req DeployRequest) (cloudevents.Event, error) {
	data, deployID, err := prepare(ctx, blobs, req)
	if err != nil {
		return cloudevents.Event{}, err
	}
	return events.New(events.DeployRequested, events.Meta{
		ID: events.StepID(deployID, "requested"), Source: "/sealane/cli", Target: data.Target,
		CorrelationID: deployID, DataRef: data.InputsRef,
	}, data)
}

func prepare(ctx context.Context, b Uploads, req DeployRequest) (events.RequestedData, string, error) {
	local, err := Load(ctx, req)
	if err != nil {
		return events.RequestedData{}, "", err
	}
	if err := local.Requested.Target.Validate(); err != nil {
		return events.RequestedData{}, "", err
	}
	deployID := uuid.NewString()
	out, err := local.Store(ctx, b, req.ReplyKey)
	return out, deployID, err
}

// Local is a deploy request read from the local disk and checked: the packed chart, the
// values and the request data without the Object Store references.
type Local struct {
	Archive   []byte
	Digest    string
	Inputs    chart.Inputs
	Requested events.RequestedData
}

// Load fetches and packs the chart (downloading missing dependencies), reads the values
// files and resolves the names; `sealane render` uses it as is, Deploy stores the result and
// publishes it. Bad input fails here.
func Load(ctx context.Context, req DeployRequest) (Local, error) {
	archive, meta, digest, err := chartsource.Resolve(ctx, chartsource.NewSource(req.ChartDir, req.ChartRepo, req.ChartVersion), req.ChartSource)
	if err != nil {
		return Local{}, err
	}
	inputs, err := readInputs(req)
	if err != nil {
		return Local{}, err
	}
	// Check values here too, so a typo fails before anything is published.
	if _, err := chart.UserValues(inputs); err != nil {
		return Local{}, err
	}
	project := orDefault(req.Project, meta.Name)
	names, err := ResolveNames(project, req.Env, req.Release, req.Namespace)
	if err != nil {
		return Local{}, err
	}
	rd := events.RequestedData{
		Target:      events.Target{Cluster: req.Cluster, Namespace: names.Namespace, Release: names.Release},
		Project:     project,
		Env:         names.Env,
		Chart:       events.ChartSource{Digest: digest, Name: meta.Name, Version: meta.Version},
		Timeout:     events.Duration(req.Timeout),
		RequestedBy: req.RequestedBy,
		Git:         req.Git,
		Images:      req.Images,
		ImagesRepo:  req.ImagesRepo,
		Annotations: req.Annotations,
		Labels:      req.Labels,
		ApplyMethod: req.ApplyMethod, TakeOwnership: req.TakeOwnership,
		Operation: req.Operation, DiffContextLines: req.DiffContextLines, Supersede: req.Supersede,
		ReleaseStorage: req.ReleaseStorage,
	}
	if req.Cluster != "" {
		if err := rd.Target.Validate(); err != nil {
			return Local{}, err
		}
	}
	return Local{Archive: archive, Digest: digest, Inputs: inputs, Requested: rd}, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// readInputs reads the files a request names: values files, secret values files (left
// encrypted) and --set-file files.
func readInputs(req DeployRequest) (chart.Inputs, error) {
	in := chart.Inputs{Set: req.Set, SetString: req.SetString, SetJSON: req.SetJSON, SetLiteral: req.SetLiteral}
	for _, f := range req.ValuesFiles {
		content, err := os.ReadFile(f)
		if err != nil {
			return in, fmt.Errorf("values file %s: %w", f, err)
		}
		in.ValuesFiles = append(in.ValuesFiles, chart.ValuesFile{Name: f, Content: content})
	}
	for _, f := range req.SecretValuesFiles {
		content, err := os.ReadFile(f)
		if err != nil {
			return in, fmt.Errorf("secret values file %s: %w", f, err)
		}
		in.SecretValuesFiles = append(in.SecretValuesFiles, chart.ValuesFile{Name: f, Content: content})
	}
	for _, expr := range req.SetFile {
		key, path, ok := strings.Cut(expr, "=")
		if !ok || key == "" || path == "" {
			return in, fmt.Errorf("--set-file %q: want key=path", expr)
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return in, fmt.Errorf("--set-file %s: %w", expr, err)
		}
		in.SetFile = append(in.SetFile, chart.FileValue{Key: key, Name: path, Content: content})
	}
	return in, nil
}
