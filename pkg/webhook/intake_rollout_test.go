package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/rollout"
)

// TestIntakeStartsRollout: a push to a route that names a rollout publishes one
// rollout.requested (not a deploy request): the push's fields rendered into the release and
// namespace with {{ .Cluster }} and {{ .Labels.KEY }} kept for the coordinator, the inline
// waves and policies, the chart at the pushed commit, the requester and the delivery. A
// redelivery names the rollout and publishes nothing; the audit names the rollout. A tag
// route's rollout file is passed on as a file at the pushed commit.
func TestIntakeStartsRollout(t *testing.T) {
	in := newIntake(t)
	body := githubPush("refs/heads/main", shaA, false)
	code, a, _ := in.send(t, "fleet", githubHeaders(ghOld, "fleet-1", body), body)
	if code != http.StatusAccepted || len(a.RolloutIDs) != 1 || len(a.DeployIDs) != 0 || !strings.HasPrefix(a.RolloutIDs[0], "ro-") {
		t.Fatalf("push: %d %+v, want 202 with one rollout id", code, a)
	}
	id := a.RolloutIDs[0]
	if n := len(in.events(t, events.DeployRequested)); n != 0 {
		t.Fatalf("%d deploy requests, want none (the coordinator deploys)", n)
	}
	reqs := in.events(t, events.RolloutRequested)
	if len(reqs) != 1 {
		t.Fatalf("%d rollout requests, want 1", len(reqs))
	}
	var d events.RolloutRequestedData
	if err := json.Unmarshal(reqs[0], &d); err != nil {
		t.Fatal(err)
	}
	var spec rollout.Spec
	if err := json.Unmarshal(d.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	if d.RolloutID != id || spec.Namespace != "main-{{ .Cluster }}" || spec.Release != "shop" || len(spec.Waves) != 2 ||
		spec.Waves[1].MaxParallel.String() != "25%" || spec.OnNewRollout != rollout.Supersede || spec.Clusters.Selector != "env in (staging,prod)" {
		t.Fatalf("rollout %s spec %+v, want rollout %s of shop to main-{{ .Cluster }} in the route's waves", d.RolloutID, spec, id)
	}
	g := d.Request.Chart.Git
	if g == nil || g.Commit != shaA || spec.Chart.Git == nil || spec.Chart.Git.Commit != shaA || d.Request.InputsRef == "" ||
		d.Request.Git == nil || d.Request.Git.Author != "alice" || d.RequestedBy != "webhook fleet (pushed by alice)" {
		t.Fatalf("request %+v (chart %+v), by %q: want commit %s, its --set stored, requested by the receiver and pusher", d.Request, g, d.RequestedBy, shaA)
	}
	if d.SpecFile != nil || d.Webhook == nil || *d.Webhook != (events.WebhookOrigin{Receiver: "fleet", DeliveryID: "fleet-1", Route: 0}) {
		t.Fatalf("spec file %+v, webhook %+v: want none, and the delivery", d.SpecFile, d.Webhook)
	}

	code, a, _ = in.send(t, "fleet", githubHeaders(ghOld, "fleet-1", body), body)
	if code != http.StatusOK || a.Status != "duplicate" || a.Reason != "duplicate of rollout "+id {
		t.Fatalf("redelivery: %d %+v, want 200 duplicate of rollout %s", code, a, id)
	}
	if n := len(in.events(t, events.RolloutRequested)); n != 1 {
		t.Fatalf("%d rollout requests after the redelivery, want 1", n)
	}
	c := in.countsWhen(t, func(c map[string]int) bool { return c["webhook_accepted"] == 1 && c["webhook_duplicate"] == 1 })
	if c["webhook_accepted"] != 1 || c["webhook_duplicate"] != 1 {
		t.Fatalf("audit %v, want one accepted and one duplicate", c)
	}
	for _, typ := range []events.Type{events.WebhookAccepted, events.WebhookDuplicate} {
		var w events.WebhookData
		if err := json.Unmarshal(in.events(t, typ)[0], &w); err != nil || w.RolloutID != id || w.DeployID != "" {
			t.Errorf("%s: %+v (%v), want rollout %s and no deploy", typ.Token(), w, err, id)
		}
	}

	tag := githubPush("refs/tags/v1.2.0", shaB, false)
	code, a, _ = in.send(t, "fleet", githubHeaders(ghOld, "fleet-2", tag), tag)
	if code != http.StatusAccepted || len(a.RolloutIDs) != 1 {
		t.Fatalf("tag push: %d %+v, want 202 with a rollout", code, a)
	}
	reqs = in.events(t, events.RolloutRequested)
	if err := json.Unmarshal(reqs[len(reqs)-1], &d); err != nil {
		t.Fatal(err)
	}
	want := events.GitFile{URL: "https://git.example.com/acme/shop.git", Commit: shaB, Path: "deploy/rollout.yaml"}
	if d.SpecFile == nil || *d.SpecFile != want || d.Webhook.Route != 1 {
		t.Fatalf("tag rollout: spec file %+v, route %d; want %+v by route 1", d.SpecFile, d.Webhook.Route, want)
	}
	if err := json.Unmarshal(d.Spec, &spec); err != nil || spec.Namespace != "shop-{{ .Labels.region }}" {
		t.Fatalf("tag rollout spec %+v (%v), want namespace shop-{{ .Labels.region }}", spec, err)
	}
}
