package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/test/cdschema"
	"github.com/sealane/sealane/test/harness"
)

// TestSignedRequests runs the pipeline as a service (`sealane serve all`) that accepts only
// requests signed by a registered client key, against a standalone NATS server: a deploy
// signed with the client's nkey succeeds and its release record names the verified client
// (not the requestedBy the client wrote); an unsigned one fails with the reason; a request
// whose payload targets another namespace than the subject it was published on fails naming
// both.
func TestSignedRequests(t *testing.T) {
	sharePayloadKey(t)
	dir := t.TempDir()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile, keysFile := filepath.Join(dir, "client.nk"), filepath.Join(dir, "client-keys.yaml")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keysFile, []byte("ci-deployer: "+pub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A NATS that authenticates everyone: the client by its nkey (the key it signs with), the
	// services and an unsigned client by password.
	port := harness.FreePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `listen: 127.0.0.1:%d
jetstream { store_dir: %q }
authorization { users: [ {nkey: %s}, {user: serve, password: %s}, {user: plain, password: %s} ] }
`, port, t.TempDir(), pub, signedTestPassword, signedTestPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, "nats-server", natsBin, "-c", conf)
	waitTCP(t, port)
	startProcess(t, "serve all", sealaneBin, append(os.Environ(), "SEALANE_NATS_USER=serve", "SEALANE_NATS_PASSWORD="+signedTestPassword),
		"serve", "all", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info", "--client-keys", keysFile)
	ns := namespace(t)

	r := runWithEnv(t, 5*time.Minute, []string{"SEALANE_NATS_NKEY=" + seedFile}, sealaneBin, "deploy", "examples/demo", "--nats", url,
		"--release", "signed", "--namespace", ns, "--timeout", "2m", "--kubeconfig", kubeconfig)
	if r.code != 0 {
		t.Fatalf("signed deploy exit %d:\n%s", r.code, r.out)
	}
	secrets, err := clientset(t).CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=signed"})
	if err != nil || len(secrets.Items) != 1 {
		t.Fatalf("release records: %v, %v; want one", secrets, err)
	}
	if l := secrets.Items[0].Labels; l["sealane.dev/requested-by"] != "ci-deployer" || l["sealane.dev/requested-by-verified"] != "true" {
		t.Errorf("release record labels %v, want requested-by ci-deployer, verified", l)
	}
	if rels := helmList(t, ns); len(rels) != 1 || rels[0].Status != "deployed" {
		t.Errorf("helm list = %+v, want the release deployed (helm reads the labelled record)", rels)
	}

	r = runWithEnv(t, 5*time.Minute, plainUser, sealaneBin, "deploy", "examples/demo", "--nats", url,
		"--release", "unsigned", "--namespace", ns, "--timeout", "2m", "--kubeconfig", kubeconfig)
	if r.code == 0 || !strings.Contains(r.out, "is not signed") {
		t.Errorf("unsigned deploy exit %d, want a failure saying it is not signed:\n%s", r.code, r.out)
	}

	ev := runWithEnv(t, time.Minute, plainUser, sealaneBin, "events", "--nats", url, "--release", "signed", "-o", "json")
	if !strings.Contains(ev.out, `"customData":{"requestedBy":"ci-deployer","requestedByVerified":true}`) {
		t.Errorf("the CDEvent of the signed deploy does not name the verified client:\n%s", ev.out)
	}
	if !strings.Contains(ev.out, `"outcome":"succeeded","requestedBy":"ci-deployer","requestedByVerified":true`) {
		t.Errorf("release_recorded of the signed deploy does not name the verified client:\n%s", ev.out)
	}
	// The rejected deploy is a failed pipeline run for CDEvents consumers.
	ev = runWithEnv(t, time.Minute, plainUser, sealaneBin, "events", "--nats", url, "--release", "unsigned", "--type", "cd_pipelinerun_finished", "-o", "json")
	if !strings.Contains(ev.out, `"type":"`+string(events.CDPipelineRunFinished)+`"`) || !strings.Contains(ev.out, `"outcome":"failure"`) ||
		!strings.Contains(ev.out, "is not signed") {
		t.Errorf("no pipelinerun.finished with outcome failure for the unsigned deploy:\n%s", ev.out)
	}
	for _, line := range strings.Split(strings.TrimSpace(ev.out), "\n") {
		var e struct {
			Type events.Type     `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == events.CDPipelineRunFinished {
			if err := cdschema.Validate(e.Type, e.Data); err != nil {
				t.Error(err)
			}
		}
	}

	// As a client scoped to ns might try: a payload for namespace team-b on ns's subject.
	publishRequest(t, url, kp, events.Target{Cluster: "sandbox", Namespace: ns, Release: "mismatch"},
		events.RequestedData{Target: events.Target{Cluster: "sandbox", Namespace: "team-b", Release: "mismatch"},
			Chart: events.ChartSource{Name: "demo", Digest: strings.Repeat("0", 64)}})
	// A chart on the renderer's own filesystem.
	local := events.Target{Cluster: "sandbox", Namespace: ns, Release: "local"}
	publishRequest(t, url, kp, local, events.RequestedData{Target: local, Chart: events.ChartSource{Name: filepath.Join(repoRoot, "examples/demo")}})
	for release, want := range map[string][]string{
		"mismatch": {"but it was published on sealane.deploy.requested.", "namespaces/team-b"},
		"local":    {"local chart paths are refused"},
	} {
		if !eventually(context.Background(), time.Minute, func(context.Context) bool {
			ev := runWithEnv(t, time.Minute, plainUser, sealaneBin, "events", "--nats", url, "--release", release, "-o", "json")
			for _, w := range want {
				if !strings.Contains(ev.out, w) || !strings.Contains(ev.out, string(events.ReleaseRecorded)) {
					return false
				}
			}
			return true
		}) {
			t.Errorf("request %s was not refused with %q", release, want)
		}
	}

	// Signed deploys queued behind each other: a request handed the release lease is
	// re-published with its signature, which still verifies.
	t.Setenv("SEALANE_NATS_NKEY", seedFile)
	chart := configMapChart(t)
	const n = 6
	runs := make([]*background, n)
	for i := range n {
		runs[i] = sealaneBackground(t, t.TempDir(), "deploy", chart, "--nats", url, "--release", "queued", "--namespace", ns,
			"--set", fmt.Sprintf("n=%d", i+1), "--timeout", "3m", "--output", "json")
	}
	queued := 0
	for i, b := range runs {
		r := b.wait(t, 5*time.Minute)
		if r.code != 0 {
			t.Errorf("signed deploy %d exit %d:\n%s", i, r.code, r.out)
		}
		if strings.Contains(r.out, string(events.DeployQueued)) {
			queued++
		}
	}
	if hist := helmHistory(t, ns, "queued"); len(hist) != n || queued == 0 {
		t.Errorf("helm history %+v after %d signed deploys (%d queued), want %d revisions and one queued at least", hist, n, queued, n)
	}
}

// signedTestPassword is the password of TestSignedRequests' NATS users serve and plain.
const signedTestPassword = "e2e-signed-requests"

// plainUser is the environment of a client that authenticates by password: it has no key to
// sign with.
var plainUser = []string{"SEALANE_NATS_USER=plain", "SEALANE_NATS_PASSWORD=" + signedTestPassword}

// publishRequest publishes a deploy.requested for payload, signed by kp, on the subject of
// target, as a client that builds its own requests would.
func publishRequest(t *testing.T, url string, kp nkeys.KeyPair, target events.Target, payload events.RequestedData) {
	t.Helper()
	id := target.Release + "-" + fmt.Sprint(time.Now().UnixNano())
	ev, err := events.New(events.DeployRequested, events.Meta{ID: id + ".requested", Source: "/e2e", Target: target,
		CorrelationID: id}, payload)
	if err != nil {
		t.Fatal(err)
	}
	if err := events.SignRequest(&ev, kp); err != nil {
		t.Fatal(err)
	}
	msg, err := events.Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, nats.UserInfo("plain", signedTestPassword))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	reply, err := nc.RequestMsg(msg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ack struct {
		Error *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &ack); err != nil || ack.Error != nil {
		t.Fatalf("publish: %s", reply.Data)
	}
}
