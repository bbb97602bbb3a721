package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/gitsource/gittest"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/test/harness"
)

// fleetRolloutFile is the rollout file of the pushed repository: canary sandbox-1, then the
// prod clusters one at a time (what checkWaveOrder checks).
const fleetRolloutFile = `clusters: {selector: "env in (staging,prod)"}
waves:
  - {name: canary, clusters: [sandbox-1], bakeTime: 2s}
  - {name: prod, selector: env=prod, maxParallel: 1}
`

// fleetHookConfig is a receiver whose main-branch route rolls the pushed commit out across the
// fleet, in the waves of the repository's rollout file.
func fleetHookConfig(secretFile, suffix string) string {
	return fmt.Sprintf(`receivers:
  - id: fleet
    type: github
    secrets:
      - file: %s
    routes:
      - repository: acme/shop
        branches: [main]
        deploy:
          env: staging
          valuesFiles: [.helm/values-staging.yaml]
          set: ["image.tag={{ .ShortCommit }}"]
          namespace: "{{ .Cluster }}-%s"
          release: shop
          timeout: 60s
          rollout: {file: deploy/rollout.yaml}
`, secretFile, suffix)
}

// signingKey writes a new user nkey's seed to dir/name.nk and returns the file and its
// public key.
func signingKey(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	file := filepath.Join(dir, name+".nk")
	if err := os.WriteFile(file, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return file, pub
}

// hookSecretFile writes the GitHub receiver's secret to dir/github and returns the file.
func hookSecretFile(t *testing.T, dir string) string {
	t.Helper()
	file := filepath.Join(dir, "github")
	if err := os.WriteFile(file, []byte(hookSecrets["github"]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// serveHooks runs `serve all` with the webhook intake on a free port: the receivers of conf
// (checked first with `sealane webhook validate`), chart sources allowed from repo's git server,
// and the intake's and the coordinator's new signing keys trusted, with extraKeys ("name: key"
// lines) for other clients.
func (f *fleet) serveHooks(t *testing.T, dir string, repo *gittest.Repo, conf, extraKeys string) (*process, *hookIntake) {
	t.Helper()
	cfg := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, time.Minute, sealaneBin, "webhook", "validate", cfg); r.code != 0 {
		t.Fatalf("webhook validate: exit %d\n%s", r.code, r.out)
	}
	hookSeed, hookPub := signingKey(t, dir, "webhook")
	coordSeed, coordPub := signingKey(t, dir, "coordinator")
	keys := filepath.Join(dir, "client-keys.yaml")
	if err := os.WriteFile(keys, []byte("git-webhooks: "+hookPub+"\nfleet-coordinator: "+coordPub+"\n"+extraKeys), 0o600); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	gitHost := strings.SplitN(strings.TrimPrefix(repo.URL(), "http://"), "/", 2)[0]
	serve := f.serve(t, "serve all", "all", "--webhook-config", cfg, "--webhook-addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--allow-chart-source", "http://"+gitHost+"/**", "--git-cache-dir", t.TempDir(),
		"--client-keys", keys, "--webhook-signing-key", hookSeed, "--rollout-signing-key", coordSeed)
	waitTCP(t, port)
	return serve, &hookIntake{base: fmt.Sprintf("http://127.0.0.1:%d", port), repo: repo}
}

// TestWebhookRollsOutFleet pushes a commit to a repository served by git http-backend and
// delivers GitHub's signed push to a route that names a rollout file: the coordinator reads the
// file at the pushed commit and rolls that commit out to sandbox-1..3 in its waves (canary,
// then prod one at a time); every cluster runs the pushed commit, its deploys are signed by the
// coordinator and name the pusher; the rollout's events and the audit name the delivery; a
// redelivery starts nothing. A later commit whose rollout file is wrong is rejected naming the
// file, its line and the field, with nothing deployed.
func TestWebhookRollsOutFleet(t *testing.T) {
	f := newFleet(t)
	gs := gittest.NewServer(t)
	repo := gs.Init(t, "shop")
	files := hookProject("fleet")
	files["deploy/rollout.yaml"] = fleetRolloutFile
	sha := repo.Commit(t, files, "shop with a rollout file")

	dir := t.TempDir()
	secretFile := hookSecretFile(t, dir)
	serve, in := f.serveHooks(t, dir, repo, fleetHookConfig(secretFile, f.suffix), "")

	p := push{receiver: "fleet", sha: sha, before: strings.Repeat("0", 40), delivery: "fleet-delivery-1"}
	code, a := in.send(t, p)
	if code != http.StatusAccepted || len(a.RolloutIDs) != 1 || len(a.DeployIDs) != 0 {
		t.Fatalf("push: %d %+v, want 202 with one rollout id and no deploy id\nserve:\n%s", code, a, serve.output())
	}
	id := a.RolloutIDs[0]
	if code, again := in.send(t, p); code != http.StatusOK || again.Status != "duplicate" || !strings.Contains(again.Reason, "rollout "+id) {
		t.Errorf("redelivery: %d %+v, want 200 duplicate of rollout %s", code, again, id)
	}
	rec := f.waitRollout(t, id, "ended", func(r *coordinator.Record) bool { return r.State.Phase.Final() })
	if rec.State.Phase != rollout.PhaseSucceeded {
		t.Fatalf("rollout %s: %s (%s)\nserve:\n%s", id, rec.State.Phase, rec.State.Reason, serve.output())
	}
	if rec.RequestedBy != "webhook fleet (pushed by alice)" || rec.Webhook == nil || rec.Webhook.DeliveryID != p.delivery {
		t.Errorf("record: requested by %q, webhook %+v; want the receiver and pusher, delivery %s", rec.RequestedBy, rec.Webhook, p.delivery)
	}
	evs := f.rolloutEvents(t, id)
	checkWaveOrder(t, evs)
	checkFleetCommit(t, f, sha)
	named := 0
	for _, e := range evs {
		var d events.RolloutData
		if events.Type(e.Type()) == events.RolloutStarted || events.Type(e.Type()) == events.RolloutSucceeded {
			if err := events.DecodeData(e, &d); err != nil || d.Webhook == nil || d.Webhook.Receiver != "fleet" || d.Webhook.DeliveryID != p.delivery {
				t.Errorf("%s: webhook %+v (%v), want receiver fleet, delivery %s", e.Type(), d.Webhook, err, p.delivery)
			}
			named++
		}
	}
	if named != 2 {
		t.Errorf("%d of rollout_started and rollout_succeeded found", named)
	}
	checkRolloutAudit(t, f.url, id)

	// a rollout file that says what to deploy: rejected, nothing deployed
	files = map[string]string{"deploy/rollout.yaml": fleetRolloutFile + "chart: {path: elsewhere}\n"}
	bad := repo.Commit(t, files, "a rollout file with a chart")
	code, a = in.send(t, push{receiver: "fleet", sha: bad, before: sha})
	if code != http.StatusAccepted || len(a.RolloutIDs) != 1 {
		t.Fatalf("second push: %d %+v", code, a)
	}
	rec = f.waitRollout(t, a.RolloutIDs[0], "ended", func(r *coordinator.Record) bool { return r.State.Phase.Final() })
	for _, want := range []string{"deploy/rollout.yaml:5: chart:", "what it deploys (chart) is the route's deploy", bad} {
		if rec.State.Phase != rollout.PhaseFailed || !strings.Contains(rec.State.Reason, want) {
			t.Errorf("bad rollout file: %s %q, want failed naming %q", rec.State.Phase, rec.State.Reason, want)
		}
	}
	for _, c := range fleetClusters {
		if h := f.helmHistoryOf(t, c, "shop"); len(h) != 1 || h[0]["status"] != "deployed" {
			t.Errorf("helm history on %s after the rejected rollout: %v, want the one revision", c, h)
		}
	}
}

// checkFleetCommit checks that release shop on every cluster runs commit sha (the objects'
// annotation, that commit's values file, the short commit in --set) and was recorded from a
// request the coordinator signed, naming the pusher.
func checkFleetCommit(t *testing.T, f *fleet, sha string) {
	t.Helper()
	for _, c := range fleetClusters {
		cs, ns := memberClient(t, c), f.namespace(c)
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "shop-cm", metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", c, err)
			continue
		}
		if cm.Annotations["ci.werf.io/commit"] != sha || cm.Data["message"] != "fleet" || cm.Data["tag"] != sha[:7] {
			t.Errorf("%s: ConfigMap annotations %v data %v, want commit %s, message fleet, tag %s", c, cm.Annotations, cm.Data, sha, sha[:7])
		}
		records, err := cs.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=shop"})
		if err != nil || len(records.Items) != 1 {
			t.Errorf("%s: release records %v (%v), want one", c, len(records.Items), err)
			continue
		}
		if l := records.Items[0].Labels; l["sealane.dev/requested-by"] != "fleet-coordinator" || l["sealane.dev/requested-by-verified"] != "true" {
			t.Errorf("%s: release record labels %v, want requested-by fleet-coordinator, verified", c, l)
		}
	}
}

// checkRolloutAudit checks the webhook stream's webhook_accepted and webhook_duplicate of the
// delivery name rollout id.
func checkRolloutAudit(t *testing.T, natsURL, id string) {
	t.Helper()
	r := run(t, time.Minute, sealaneBin, "events", "--nats", natsURL, "--type", "webhook_accepted", "--type", "webhook_duplicate", "-o", "json")
	if r.code != 0 {
		t.Fatalf("sealane events --type webhook_*: exit %d:\n%s", r.code, r.out)
	}
	counts := map[string]int{}
	for _, e := range streamEventsOf(t, r.out) {
		var d events.WebhookData
		if json.Unmarshal(e.Data, &d) == nil && d.RolloutID == id && d.DeployID == "" {
			counts[events.Type(e.Type).Token()]++
		}
	}
	if counts["webhook_accepted"] != 1 || counts["webhook_duplicate"] != 1 {
		t.Errorf("audit events naming rollout %s: %v, want one accepted and one duplicate\n%s", id, counts, r.out)
	}
}
