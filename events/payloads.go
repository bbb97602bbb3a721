package events

import (
	"encoding/json"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
)

// Payloads are JSON ("datacontenttype: application/json"). Anything that may hold a secret
// (chart values, rendered manifests) is never inline: it lives in the Object Store and is named
// by a dataref ("nats-obj://<bucket>/<name>").

// ResourceRef names one Kubernetes object of a release.
type ResourceRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// String is the form used in messages, the same as the engine's: "Namespace/shop" or "shop/Deployment/web".
func (r ResourceRef) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Namespace + "/" + r.Kind + "/" + r.Name
}

// ChartSource points at a packed chart in the Object Store or, for a request that names a
// remote chart (a webhook, a fleet rollout), at where the renderer fetches it.
type ChartSource struct {
	Ref     string `json:"ref"`    // dataref of the .tgz; empty: the renderer fetches the chart
	Digest  string `json:"digest"` // sha256 hex of the .tgz
	Name    string `json:"name"`   // chart name; without Ref and Repo, an oci:// reference or archive URL
	Version string `json:"version"`
	// Repo is the Helm repository URL the renderer fetches Name at Version (an exact version
	// or a semver constraint) from when Ref is empty.
	Repo string `json:"repo,omitempty"`
	// Git is a chart in a git repository at one commit (a webhook's push): the renderer
	// fetches the repository at Commit, never a branch head, when Ref is empty.
	Git *GitChart `json:"git,omitempty"`
}

// GitChart names a chart in a git repository at one commit.
type GitChart struct {
	// URL is the repository's https or ssh URL.
	URL string `json:"url"`
	// Commit is the full SHA-1 (40 hex) or SHA-256 (64 hex) object name of the commit.
	Commit string `json:"commit"`
	// Path is the chart directory or werf project directory (chart in .helm/) in the
	// repository; empty is the repository's root.
	Path string `json:"path,omitempty"`
	// ValuesFiles are values files in the repository (paths from its root), merged in order
	// before the request's own values.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
}

// Duration is a time.Duration written as Go duration text ("5m0s") in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads duration text ("90s", "5m0s").
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// RequestedData is the payload of DeployRequested.
type RequestedData struct {
	Target Target `json:"target"`
	// Operation is what is asked of the release; empty means OperationDeploy.
	Operation Operation `json:"operation,omitempty"`
	// RollbackTo is the revision a rollback restores; 0 means the one before the last.
	RollbackTo int `json:"rollbackTo,omitempty"`
	// RollbackToDeployed makes a rollback restore the last deployed revision instead (what
	// --auto-rollback does after a failed deploy).
	RollbackToDeployed bool `json:"rollbackToDeployed,omitempty"`
	// ApplyMethod is how existing objects are updated: "ssa" (server-side apply, the
	// default) or "3wm" (client-side three-way merge).
	ApplyMethod string `json:"applyMethod,omitempty"`
	// TakeOwnership adopts existing objects whatever release owns them (--take-ownership).
	TakeOwnership bool `json:"takeOwnership,omitempty"`
	// DiffContextLines is, for OperationPlan, the number of unchanged lines around each change
	// of a diff: 0 the default (3), negative none.
	DiffContextLines int `json:"diffContextLines,omitempty"`
	// KeepHistory keeps an uninstalled release's records, marked uninstalled.
	KeepHistory bool `json:"keepHistory,omitempty"`
	// WithNamespace deletes the release namespace after an uninstall.
	WithNamespace bool `json:"withNamespace,omitempty"`
	// Supersede drops the requests queued for the release (each is closed as failed,
	// "superseded by deploy <id>") so that this one runs next (--supersede).
	Supersede bool        `json:"supersede,omitempty"`
	Project   string      `json:"project,omitempty"`
	Env       string      `json:"env,omitempty"`
	Chart     ChartSource `json:"chart"`
	// InputsRef is the dataref of the values files, the still-encrypted secret values files
	// and the --set family of values.
	InputsRef   string   `json:"inputsRef,omitempty"`
	Timeout     Duration `json:"timeout"`
	RequestedBy string   `json:"requestedBy,omitempty"`
	// Git is the source revision being deployed, when the requester knows it.
	Git *Git `json:"git,omitempty"`
	// Images are the built images the chart refers to by name (.Values.global.image.NAME).
	Images map[string]Image `json:"images,omitempty"`
	// ImagesRepo is the repository the project's images live under (.Values.global.werf.repo).
	ImagesRepo string `json:"imagesRepo,omitempty"`
	// Annotations and Labels are added to every deployed object (--add-annotation, --add-label).
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`

	// --- Release storage (where the Helm release records are kept) ---

	// ReleaseStorage is where and how the release records are kept (--release-storage,
	// --release-storage-namespace, --history-max); the zero value is Helm's default: Secrets in
	// the release namespace, 10 revisions kept.
	ReleaseStorage ReleaseStorage `json:"releaseStorage,omitzero"`
}

// --- Release storage ---

// The release storage drivers, as Helm's HELM_DRIVER names them.
const (
	// StorageSecret keeps records in Secrets of type helm.sh/release.v1 (Helm's default).
	StorageSecret = "secret"
	// StorageConfigMap keeps records in ConfigMaps (HELM_DRIVER=configmap).
	StorageConfigMap = "configmap"
)

// ReleaseStorage says where a release's records live and how many are kept. Every stage that
// reads or writes records of the release uses it, so all requests for one release must agree.
type ReleaseStorage struct {
	// Driver is StorageSecret (empty means it) or StorageConfigMap.
	Driver string `json:"driver,omitempty"`
	// Namespace is the namespace the records are kept in; empty means the release namespace.
	Namespace string `json:"namespace,omitempty"`
	// HistoryMax is how many revisions are kept (older ones are pruned when a revision is
	// recorded): nil means the default (10), 0 unlimited.
	HistoryMax *int `json:"historyMax,omitempty"`
}

// Operation is what a request asks of a release.
type Operation string

// The operations a deploy request can ask for.
const (
	// OperationDeploy installs or upgrades the release from the request's chart and values.
	OperationDeploy Operation = "deploy"
	// OperationRollback makes a new revision from an earlier revision's manifest, values and
	// chart, running the rollback hooks.
	OperationRollback Operation = "rollback"
	// OperationUninstall removes the release (sealane dismiss): pre-delete hooks, deletion of
	// what the release owns (keep policies honoured), post-delete hooks, then the records.
	OperationUninstall Operation = "uninstall"
	// OperationTest runs the test hooks of the deployed revision (sealane test); the release
	// records are not changed.
	OperationTest Operation = "test"
	// OperationPlan renders the chart and dry-runs the deploy (sealane plan): the answer is a
	// DeployPlanned event; nothing is written to the cluster or the release records.
	OperationPlan Operation = "plan"
)

// Git describes the source revision of a deploy as CI systems and webhooks report it.
type Git struct {
	Ref         string `json:"ref,omitempty"` // the branch or the tag
	Commit      string `json:"commit,omitempty"`
	Branch      string `json:"branch,omitempty"`
	Tag         string `json:"tag,omitempty"`
	PipelineURL string `json:"pipelineURL,omitempty"`
	JobURL      string `json:"jobURL,omitempty"`
	Author      string `json:"author,omitempty"`
}

// Image is one built image of the project.
type Image struct {
	Repository string `json:"repository"`
	Tag        string `json:"tag,omitempty"`
	Digest     string `json:"digest,omitempty"`
}

// Reference is the pullable reference: repository@digest when the digest is known, else
// repository:tag, else the bare repository.
func (i Image) Reference() string {
	switch {
	case i.Digest != "":
		return i.Repository + "@" + i.Digest
	case i.Tag != "":
		return i.Repository + ":" + i.Tag
	}
	return i.Repository
}

// RenderedData is the payload of DeployRendered.
type RenderedData struct {
	Target    Target `json:"target"`
	Revision  int    `json:"revision"`
	IsUpgrade bool   `json:"isUpgrade"`
	// PreviousRevision is the release's last deployed revision before this deploy (0: none);
	// a fleet rollout reverts to it.
	PreviousRevision int         `json:"previousRevision,omitempty"`
	Chart            ChartSource `json:"chart"`
	RenderRef        string      `json:"renderRef"` // dataref of the render (manifest, hooks, values, notes)
	// NotesRef is the requester's copy of the render's notes, in its input bucket, sealed with
	// the reply key it sent in its inputs (empty: no notes, or no reply key).
	NotesRef  string        `json:"notesRef,omitempty"`
	Resources []ResourceRef `json:"resources"`
	Timeout   Duration      `json:"timeout"`
	// Warnings are validation problems that do not stop the deploy, one line each naming the
	// template, line, resource and field (never a value).
	Warnings []string `json:"warnings,omitempty"`
	// Operation is the request's; Description is what the release record says while and after
	// it runs ("Rollback to 3"), empty for Helm's defaults.
	Operation   Operation `json:"operation,omitempty"`
	Description string    `json:"description,omitempty"`
	// RollbackTo is the revision a rollback goes back to (0: no rollback); its record names it
	// as Helm 4's does (info.rollback_revision).
	RollbackTo int `json:"rollbackTo,omitempty"`
	// RequestedBy is who asked for the deploy: with RequestedByVerified, the name of the client
	// whose signature the renderer verified (see ExtSignature); else the request's requestedBy
	// as the client claimed it.
	RequestedBy         string `json:"requestedBy,omitempty"`
	RequestedByVerified bool   `json:"requestedByVerified,omitempty"`
}

// StartedData is the payload of DeployStarted.
type StartedData struct {
	Target    Target   `json:"target"`
	Revision  int      `json:"revision"`
	RenderRef string   `json:"renderRef"`
	Timeout   Duration `json:"timeout"`
}

// Action says what applying did to one object.
type Action string

// The outcomes of applying one object.
const (
	ActionCreated    Action = "created"
	ActionConfigured Action = "configured"
	ActionUnchanged  Action = "unchanged"
	ActionRecreated  Action = "recreated" // deleted and created again (before-creation policy, immutable field)
	ActionDeleted    Action = "deleted"
	ActionKept       Action = "kept"   // not deleted: helm.sh/resource-policy keep, ownership anyone
	ActionAbsent     Action = "absent" // to delete, but already gone
)

// AppliedResource is one object of an applied phase and what happened to it.
type AppliedResource struct {
	Resource ResourceRef `json:"resource"`
	Action   Action      `json:"action"`
}

// PhaseAppliedData is the payload of PhaseApplied.
type PhaseAppliedData struct {
	Target   Target            `json:"target"`
	Revision int               `json:"revision"`
	Phase    int               `json:"phase"`
	Phases   int               `json:"phases"`
	Applied  []AppliedResource `json:"applied"`
	// Waits are what the tracker must wait for before the next phase.
	Waits    []Wait    `json:"waits"`
	Deadline time.Time `json:"deadline"` // when the whole deploy times out
	// Started is when the applier began the phase: the Kubernetes events and container logs
	// the tracker shows for the phase are those from then on.
	Started time.Time `json:"started,omitzero"`
}

// Wait is one thing the tracker waits for: a resource reaching a condition.
type Wait struct {
	Resource ResourceRef `json:"resource"`
	// Until is ready (the kind's readiness rules), present, absent or complete (a Job or Pod
	// run to completion); empty means ready.
	Until string `json:"until,omitempty"`
	// NonBlocking waits (werf.io/track-termination-mode: NonBlocking) are tracked while the
	// others are waited for, and do not hold the phase.
	NonBlocking bool `json:"nonBlocking,omitempty"`
}

// State is a resource's readiness as the tracker sees it.
type State string

// The readiness states shown in the progress table.
const (
	StateWaiting State = "WAITING"
	StateReady   State = "READY"
	StateFailed  State = "FAILED"
)

// ProgressedData is the payload of ResourceProgressed.
type ProgressedData struct {
	Target   Target      `json:"target"`
	Revision int         `json:"revision"`
	Phase    int         `json:"phase"`
	Resource ResourceRef `json:"resource"`
	// Until is what the tracker waits for (as in Wait.Until; empty means ready).
	Until   string `json:"until,omitempty"`
	State   State  `json:"state"`
	Ready   int32  `json:"ready"`
	Desired int32  `json:"desired"`
	Message string `json:"message,omitempty"`
	// Errors counts the errors seen on the resource and its pods (failed events, crash loops,
	// probe failures); LastError is the latest, in one line.
	Errors    int    `json:"errors,omitempty"`
	LastError string `json:"lastError,omitempty"`
	// Pods are the resource's pods, shown under it in the progress table.
	Pods []PodProgress `json:"pods,omitempty"`
	// NonBlocking says the deploy does not wait for this resource
	// (werf.io/track-termination-mode: NonBlocking).
	NonBlocking bool `json:"nonBlocking,omitempty"`
}

// PodProgress is one pod of a tracked resource.
type PodProgress struct {
	Name     string `json:"name"`
	State    State  `json:"state"`
	Ready    int32  `json:"ready"`   // ready containers
	Desired  int32  `json:"desired"` // containers
	Restarts int32  `json:"restarts,omitempty"`
	Message  string `json:"message,omitempty"`
}

// ResourceFailure names a resource that failed a deploy and why.
type ResourceFailure struct {
	Resource ResourceRef `json:"resource"`
	Reason   string      `json:"reason"`
}

// PhaseTrackedData is the payload of PhaseTracked.
type PhaseTrackedData struct {
	Target   Target            `json:"target"`
	Revision int               `json:"revision"`
	Phase    int               `json:"phase"`
	Phases   int               `json:"phases"`
	Ready    bool              `json:"ready"`
	Failures []ResourceFailure `json:"failures,omitempty"`
	// LogBatches is how many log_lines events the tracker published for this phase, all
	// stored before this event: a client showing logs waits for exactly those.
	LogBatches int `json:"logBatches,omitempty"`
}

// SucceededData is the payload of DeploySucceeded.
type SucceededData struct {
	Target   Target `json:"target"`
	Revision int    `json:"revision"`
	// UpToDate says nothing had to change: no new revision was made, Revision is the deployed one.
	UpToDate bool `json:"upToDate,omitempty"`
}

// Stage names a pipeline stage.
type Stage string

// The pipeline stages.
const (
	StageRenderer Stage = "renderer"
	StageApplier  Stage = "applier"
	StageTracker  Stage = "tracker"
	StageRecorder Stage = "recorder"
)

// FailedData is the payload of DeployFailed. Revision is 0 when the deploy failed before a
// release revision was written.
type FailedData struct {
	Target   Target            `json:"target"`
	Revision int               `json:"revision"`
	Stage    Stage             `json:"stage"`
	Reason   string            `json:"reason"`
	Failures []ResourceFailure `json:"failures,omitempty"`
	// Unreachable says the deploy failed because the cluster's API server did not answer
	// (Reason: `cluster "…" unreachable: <cause>`): a fleet rollout applies its
	// offlineClusters policy instead of counting a failure.
	Unreachable bool `json:"unreachable,omitempty"`
}

// Outcome is how a deploy ended.
type Outcome string

// The deploy outcomes.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
)

// RecordedData is the payload of ReleaseRecorded, the last event of every deploy.
type RecordedData struct {
	Target   Target `json:"target"`
	Revision int    `json:"revision"` // 0 when no revision was written
	// PreviousRevision is the release's last deployed revision before this deploy (0: none).
	PreviousRevision int     `json:"previousRevision,omitempty"`
	Status           string  `json:"status,omitempty"` // Helm release status: deployed, failed
	Outcome          Outcome `json:"outcome"`
	Reason           string  `json:"reason,omitempty"`
	// UpToDate says the deploy changed nothing and wrote no revision.
	UpToDate bool `json:"upToDate,omitempty"`
	// Unreachable is FailedData.Unreachable of the failure recorded: the cluster's API server
	// did not answer.
	Unreachable bool `json:"unreachable,omitempty"`
	// Tests says the recorded revision has Helm test hooks (`helm test` would run some): a
	// fleet rollout runs them as a gate.
	Tests bool `json:"tests,omitempty"`
	// RequestedBy and RequestedByVerified are the deploy's requester as RenderedData has them
	// (absent for a request refused before it was rendered).
	RequestedBy         string `json:"requestedBy,omitempty"`
	RequestedByVerified bool   `json:"requestedByVerified,omitempty"`
}

// PlannedChange is what a deploy would do to one resource. It carries no field values: the
// diff text, masked, is in the plan report behind PlannedData.PlanRef.
type PlannedChange struct {
	Resource ResourceRef `json:"resource"`
	// Change is create, update, recreate, delete or unchanged.
	Change string `json:"change"`
	Hook   bool   `json:"hook,omitempty"`
	// Drift says the live object differs from what the last release applied.
	Drift bool `json:"drift,omitempty"`
	// Problem says why the deploy would fail on this resource.
	Problem string `json:"problem,omitempty"`
}

// PlannedData is the payload of DeployPlanned.
type PlannedData struct {
	Target Target `json:"target"`
	// Revision is the revision a deploy would write; Deployed the one it would upgrade (0: an install).
	Revision int `json:"revision"`
	Deployed int `json:"deployed,omitempty"`
	Phases   int `json:"phases"`
	// PlanRef is the dataref of the full report (phases, masked diffs); it may quote values,
	// so it only travels by reference.
	PlanRef string `json:"planRef"`
	// ReplyRef is the requester's copy of the report, in its input bucket, sealed with the
	// reply key it sent in its inputs (empty: no reply key).
	ReplyRef string          `json:"replyRef,omitempty"`
	Changes  []PlannedChange `json:"changes"`
	// HasChanges says a deploy would change the cluster (a change other than unchanged, or the
	// release namespace or record would be created).
	HasChanges bool `json:"hasChanges"`
	// Problem is set when the deploy would fail.
	Problem  string   `json:"problem,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// OperationOf names the operation a deploy.requested event asks for — deploy, plan,
// rollback, uninstall, test — for span names; "deploy" when it names none.
func OperationOf(e cloudevents.Event) string {
	var d struct {
		Operation Operation `json:"operation"`
	}
	if DecodeData(e, &d) != nil || d.Operation == "" {
		return "deploy"
	}
	return string(d.Operation)
}
