package renderer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/admission"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/chartsource"
	"github.com/sealane/sealane/pkg/deploy"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
	"github.com/sealane/sealane/pkg/stage"
)

// fetchOptions are the chartsource options of a remote chart fetched for a request under the
// policy i.
func fetchOptions(i stagekit.Admission) chartsource.Options {
	o := chartsource.Options{MaxBytes: i.MaxChartBytes, Timeout: i.FetchTimeout}
	if o.MaxBytes <= 0 {
		o.MaxBytes = stagekit.DefaultMaxChartBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = stagekit.DefaultFetchTimeout
	}
	if !i.Trusted {
		o.Allow = i.Sources.Allow
	}
	return o
}

// Request is a deploy.requested as the renderer's steps (admission, lease, render) hand it on:
// decoded once, with the client whose signature admission verified.
type Request struct {
	events.RequestedData
	// client is the verified client ("" when the request was not verified: no client keys,
	// or the renderer called without admission).
	client string
}

// requestedBy is who asked: the verified client (verified true), else the claimed name.
func (r *Request) requestedBy() (name string, verified bool) {
	if r.client != "" {
		return r.client, true
	}
	return r.RequestedBy, false
}

// RequestStep is one step of the renderer's chain over a decoded request: the lease step
// (package pipeline), then the Renderer.
type RequestStep interface {
	// HandleRequest handles one decoded request.
	HandleRequest(ctx context.Context, in stage.Input, req *Request) (stage.Output, error)
}

// RequestFunc adapts a function to RequestStep.
type RequestFunc func(ctx context.Context, in stage.Input, req *Request) (stage.Output, error)

// HandleRequest calls f.
func (f RequestFunc) HandleRequest(ctx context.Context, in stage.Input, req *Request) (stage.Output, error) {
	return f(ctx, in, req)
}

// admittingRenderer checks a deploy.requested before the lease step and the renderer see it:
// subject and payload agree, the signature names a registered client, the chart is uploaded
// or from an allowed source. A refused new request fails its deploy with the reason (the
// deploy.failed event is the audit record); a refused copy of a deploy that exists already
// is dropped, so that nobody can fail another client's deploy by reusing its id.
type admittingRenderer struct {
	stagekit.Deps
	next RequestStep
}

// Admitting is the renderer stage's handler: the admission checks of a deploy.requested, then
// next (the lease step and the Renderer) with the decoded request.
func Admitting(d stagekit.Deps, next RequestStep) stage.Handler {
	return &admittingRenderer{Deps: d, next: next}
}

// AdmitsRequest says whether the renderer acts on a deploy.requested given the deploy's
// status: a first request, or a queued one whose turn came. Any later status means the same
// deploy was requested again (a duplicate with another message id) and is underway or done:
// admission passes it on unchecked and the lease step ignores it.
func AdmitsRequest(s *deploy.State) bool {
	return s == nil || s.Status == "" || s.Status == deploy.Requested || s.Status == deploy.Queued
}

// Handle decodes one request — the one decoding of the renderer's chain — checks it and passes
// it on with the verified client. A payload that does not decode fails its deploy at once.
func (g *admittingRenderer) Handle(ctx context.Context, in stage.Input) (stage.Output, error) {
	req := &Request{}
	if err := stagekit.Decode(in, &req.RequestedData); err != nil {
		return stage.Output{}, stage.Permanent(err)
	}
	if !AdmitsRequest(in.State) {
		return g.next.HandleRequest(ctx, in, req) // the lease step ignores a repeat
	}
	handed := in.State != nil && in.State.Status == deploy.Queued && events.SignedID(in.Event.ID()) != in.Event.ID()
	client, err := g.check(in, req.RequestedData, handed)
	if err == nil {
		req.client = client
		return g.next.HandleRequest(ctx, in, req)
	}
	reason := "request refused: " + err.Error()
	if client != "" {
		reason += " (request signed by client " + client + ")"
	}
	in.Logger(g.Logger()).Warn("deploy request refused", zap.String("event", in.Event.ID()),
		zap.String("subject", in.Subject), zap.String("reason", reason))
	switch {
	case in.State == nil:
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, reason)}}, nil
	case handed && g.Leases != nil:
		released, err := g.ReleaseHeld(ctx, in)
		if err != nil {
			return stage.Output{}, err
		}
		return stage.Output{Emits: append([]stage.Emit{stage.Fail(events.StageRenderer, in, 0, reason)}, released...)}, nil
	case handed:
		return stage.Output{Emits: []stage.Emit{stage.Fail(events.StageRenderer, in, 0, reason)}}, nil
	}
	return stage.Output{}, nil // another copy of a queued deploy: not its requester's to fail
}

// check runs the admission checks; it returns the verified client ("" without client keys), also
// with the error of a check after the signature's, for the refusal to name who was refused.
func (g *admittingRenderer) check(in stage.Input, req events.RequestedData, handed bool) (string, error) {
	client, err := g.Admission.Verifier.Verify(in.Event, g.Now(), handed)
	if err != nil {
		return "", err
	}
	if in.Subject != "" {
		if err := admission.CheckSubject(in.Subject, in.Target, req.Target); err != nil {
			return client, err
		}
	}
	scope := g.Admission.Verifier.Keys.Scope(client)
	if err := scope.CheckRequest(client, req); err != nil { // tenant.go
		return client, err
	}
	own := "" // a tenant names only its own uploads
	if scope != nil {
		own = bus.TenantInputBucket(client)
	}
	if err := checkInputsRef(req.InputsRef, own); err != nil {
		return client, err
	}
	if err := checkUploadBucket("chart "+req.Chart.Name, req.Chart.Ref, own); err != nil {
		return client, err
	}
	return client, checkChart(g.Admission, req.Chart)
}

// checkUploadBucket refuses an upload that is not in an input bucket (the blob bucket is the
// stages' own), or not in own when the client is limited to its own uploads (own not empty).
func checkUploadBucket(what, ref, own string) error {
	if ref == "" {
		return nil
	}
	bucket, _, err := bus.ParseBlobRef(ref)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !bus.IsInputBucket(bucket) {
		return fmt.Errorf("%s: %s is not in an input bucket: a request names only what its client uploaded (%s…)", what, ref, bus.BlobRef(bus.InputBucketPrefix, ""))
	}
	if own != "" && bucket != own {
		return fmt.Errorf("%s: %s is not this client's upload: its requests name only what it stored in its own input bucket %s (set $%s=%s)",
			what, ref, own, bus.EnvInputBucket, own)
	}
	return nil
}

// chartDigest is a chart digest as the client computes it: SHA-256, lowercase hex.
var chartDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// checkChart refuses a chart the renderer may not fetch under the policy i: an uploaded chart
// must be stored under its digest, a remote one must be allowed by Sources; a local path is
// refused unless admission is trusted.
func checkChart(i stagekit.Admission, ch events.ChartSource) error {
	if ch.Ref == "" && ch.Git != nil {
		return checkGitChart(i, ch.Git) // gitchart.go
	}
	if ch.Ref != "" {
		_, name, err := bus.ParseBlobRef(ch.Ref)
		if err != nil || !chartDigest.MatchString(ch.Digest) || name != "charts/"+ch.Digest {
			return fmt.Errorf("chart %s: an uploaded chart is referenced as %s, with its SHA-256 digest (got ref %q, digest %q)",
				ch.Name, bus.BlobRef("<bucket>", "charts/<digest>"), ch.Ref, ch.Digest)
		}
		return nil
	}
	if i.Trusted || ch.Name == "" {
		return nil // the renderer reports a request without a chart
	}
	loc := chartsource.Location(chartsource.NewSource(ch.Name, ch.Repo, ch.Version))
	if err := i.Sources.Allow(loc); err != nil {
		return fmt.Errorf("chart %s: %w", ch.Name, err)
	}
	return nil
}

// inputsName is the name of a request's values: inputs/<SHA-256 of the content, hex>. The
// request's signature covers the name, so the renderer, which checks the digest, renders
// exactly the values the client signed for.
var inputsName = regexp.MustCompile(`^inputs/[0-9a-f]{64}$`)

// checkInputsRef refuses values not stored by their digest, or, for a client limited to its
// own uploads, stored by another client.
func checkInputsRef(ref, own string) error {
	if ref == "" {
		return nil
	}
	if _, name, err := bus.ParseBlobRef(ref); err != nil || !inputsName.MatchString(name) {
		return fmt.Errorf("values %s: a request's values are stored as inputs/<SHA-256 of the values, hex> in its client's input bucket", ref)
	}
	return checkUploadBucket("values", ref, own)
}

// fetchRefused says whether a remote chart fetch under the policy i failed for a reason
// retrying cannot fix, and words it: a missing chart, a source not allowed, a download over the
// size limit, or one that took longer than the fetch timeout (ctx, the handler's, still live).
func fetchRefused(ctx context.Context, i stagekit.Admission, err error) (string, bool) {
	opts := fetchOptions(i)
	switch {
	case chartMissing(err), errors.Is(err, chartsource.ErrNotAllowed), gitRefused(err):
		return err.Error(), true
	case errors.Is(err, chartsource.ErrTooLarge):
		return fmt.Sprintf("%v; the renderer's limit is --max-chart-size (%d bytes): use a smaller chart, or upload it with the request", err, opts.MaxBytes), true
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return fmt.Sprintf("%v; the chart took longer than the renderer's --chart-fetch-timeout (%s) to download", err, opts.Timeout), true
	}
	return "", false
}

// checkInputsDigest refuses values whose content is not what their name (inputs/<digest>), and
// so the request's signature, says: replaced after the client stored them.
func checkInputsDigest(ref string, raw []byte) error {
	_, name, err := bus.ParseBlobRef(ref)
	if err != nil {
		return fmt.Errorf("values %s: %w", ref, err)
	}
	sum := sha256.Sum256(raw)
	if want := strings.TrimPrefix(name, "inputs/"); want != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("values %s: the stored content's digest is %x, not the one its name and the signed request give: "+
			"it was replaced after the client stored it; deploy again", ref, sum[:8])
	}
	return nil
}
