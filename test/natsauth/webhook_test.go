package natsauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/githook"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/serve"
)

// webhookSecret is the github receiver's secret in TestWebhookIntakeOnItsOwnUser.
const webhookSecret = "natsauth-webhook-secret"

// webhookReceivers is a receivers file with one github receiver whose secret is the file
// secret (relative to the receivers file) and one route with --set values, so that an
// accepted push stores request inputs in the Object Store too.
const webhookReceivers = `receivers:
  - id: natsauth-github
    type: github
    secrets:
      - file: natsauth-github.secret
    routes:
      - repository: acme/app
        branches: [main]
        deploy:
          chart: {repository: https://git.example.com/acme/charts.git, path: app}
          set: ["image.tag={{ .ShortCommit }}"]
          cluster: sandbox
          namespace: team-a
          release: app
`

// githubPush is a GitHub push of commit to refs/heads/main of acme/app.
func githubPush(commit string) []byte {
	return fmt.Appendf(nil, `{"ref":"refs/heads/main","before":"%s","after":"%s",`+
		`"repository":{"full_name":"acme/app","clone_url":"https://git.example.com/acme/app.git"},`+
		`"pusher":{"name":"octocat"},"sender":{"login":"octocat"}}`, strings.Repeat("1", 40), commit)
}

// startWebhook runs the webhook intake in this process as the webhook user (its nkey, the
// test CA, its own inbox prefix), bound to the topology the stages created, and returns its
// base URL once it listens.
func startWebhook(ctx context.Context, t *testing.T, e *natsEnv) string {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "webhooks.yaml")
	write(t, config, []byte(webhookReceivers))
	write(t, filepath.Join(dir, "natsauth-github.secret"), []byte(webhookSecret))
	key, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(payload.EnvKey, key) // the webhook stores --set values sealed, as every client does
	log := zaptest.NewLogger(t)
	node, err := serve.Open(ctx, serve.Options{NATSURL: e.url, Auth: e.auth("webhook"), Name: "sealane-webhook", Log: log})
	if err != nil {
		t.Fatalf("the webhook user cannot bind the topology: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	listening := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		o := serve.WebhookOptionsFromEnv()
		o.Config, o.Addr = config, "127.0.0.1:0"
		o.Handler.Limits.AuditInterval = 200 * time.Millisecond // refusals summed up quickly
		o.Listening = func(addr string) { listening <- addr }
		done <- serve.RunWebhook(ctx, node, o, log)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("webhook intake: %v", err)
		}
		node.Close()
	})
	select {
	case addr := <-listening:
		return "http://" + addr
	case err := <-done:
		t.Fatalf("the webhook intake did not start as the webhook user: %v", err)
	case <-ctx.Done():
		t.Fatal("the webhook intake never listened")
	}
	return ""
}

// postGitHub sends body to receiver as a GitHub delivery of event with signature sig and
// returns the status and the answer.
func postGitHub(ctx context.Context, t *testing.T, url, event, delivery, sig string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// streamCount is how many messages the deploy stream holds on subjects matching filter.
func streamCount(ctx context.Context, t *testing.T, js jetstream.JetStream, filter string) uint64 {
	t.Helper()
	stream := bus.DefaultStream
	if strings.HasPrefix(filter, "sealane.webhook.") {
		stream = bus.DefaultWebhookStream
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// TestWebhookIntakeOnItsOwnUser runs the webhook intake as the WEBHOOK user of
// deployments/nats after the stages created the topology: it creates its delivery bucket, a
// signed push is accepted and its deploy request, stored inputs and audit event land in the
// stream, a redelivery is a duplicate, a ping is ignored and a bad signature rejected — all
// without one permission violation. The same user cannot publish another deploy event,
// create a stage's consumer, read the deploy stream, or delete or purge a stream.
func TestWebhookIntakeOnItsOwnUser(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provision(ctx, t, e)
	base := startWebhook(ctx, t, e)
	url := base + "/hooks/natsauth-github"

	body := githubPush("0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c")
	sig := githook.SignGitHub([]byte(webhookSecret), body)
	code, answer := postGitHub(ctx, t, url, "push", "delivery-1", sig, body)
	if code != http.StatusAccepted {
		t.Fatalf("signed push: %d %s, want 202", code, answer)
	}
	var accepted struct {
		Status    string   `json:"status"`
		DeployIDs []string `json:"deployIds"`
	}
	if err := json.Unmarshal([]byte(answer), &accepted); err != nil || len(accepted.DeployIDs) != 1 {
		t.Fatalf("signed push answered %s (%v), want one deploy id", answer, err)
	}
	code, answer = postGitHub(ctx, t, url, "push", "delivery-1", sig, body)
	if code != http.StatusOK || !strings.Contains(answer, "duplicate") {
		t.Errorf("redelivery: %d %s, want 200 duplicate", code, answer)
	}
	ping := []byte(`{"zen":"Keep it logically awesome."}`)
	if code, answer = postGitHub(ctx, t, url, "ping", "delivery-2", githook.SignGitHub([]byte(webhookSecret), ping), ping); code != http.StatusOK {
		t.Errorf("ping: %d %s, want 200 ignored", code, answer)
	}
	if code, answer = postGitHub(ctx, t, url, "push", "delivery-3", githook.SignGitHub([]byte("wrong"), body), body); code != http.StatusUnauthorized {
		t.Errorf("wrong signature: %d %s, want 401", code, answer)
	}

	audit := jsAs(t, e, "audit")
	for filter, want := range map[string]uint64{
		"sealane.deploy.requested.sandbox.team-a.app": 1,
		"sealane.webhook.webhook_accepted.>":          1,
		"sealane.webhook.webhook_duplicate.>":         1,
		"sealane.webhook.webhook_ignored.>":           1,
		"sealane.webhook.webhook_rejected.>":          1, // the interval's summary
		"sealane.deploy.webhook_rejected.>":           0, // never in the deploy stream
	} {
		// the intake answers before it publishes the request's audit event: wait for it
		n := streamCount(ctx, t, audit, filter)
		for deadline := time.Now().Add(5 * time.Second); n < want && time.Now().Before(deadline); n = streamCount(ctx, t, audit, filter) {
			time.Sleep(20 * time.Millisecond)
		}
		if n != want {
			t.Errorf("the deploy stream holds %d messages on %s, want %d", n, filter, want)
		}
	}
	// The request's --set values are in the input bucket, by digest; the delivery is remembered.
	webhook := jsAs(t, e, "webhook")
	// two keys: the signed content's digest and the delivery id's
	if s, err := webhook.Stream(ctx, "KV_"+bus.DefaultDeliveryBucket); err != nil || s.CachedInfo().State.Msgs != 2 {
		t.Errorf("delivery bucket: %v, want the one delivery under its two keys", err)
	}
	for _, v := range e.takeViolations() {
		t.Errorf("permission violation while the webhook intake worked: %s", v)
	}
	var rd events.RequestedData
	if err := events.DecodeData(decodeEvent(t, nextEvent(ctx, t, e, "sealane.deploy.requested.>")), &rd); err != nil {
		t.Fatal(err)
	}
	if bucket, name, err := bus.ParseBlobRef(rd.InputsRef); err != nil || bucket != bus.DefaultInputBucket || len(name) != len("inputs/")+64 {
		t.Errorf("the accepted push's inputs %q (%v): want %s/inputs/<digest>", rd.InputsRef, err, bus.DefaultInputBucket)
	}

	// What the webhook user may not do.
	const succeeded = "sealane.deploy.succeeded.x.y.z"
	_, err := webhook.Publish(short(ctx, t), succeeded, []byte("{}"))
	refused(t, e, "webhook publishes deploy.succeeded", err, succeeded)
	const commanded = "sealane.deploy.rollout_commanded._._._"
	_, err = webhook.Publish(short(ctx, t), commanded, []byte("{}"))
	refused(t, e, "webhook commands a rollout (abort, approve...)", err, commanded)
	if _, err := webhook.Publish(short(ctx, t), rolloutRequested, []byte("{}")); err != nil {
		t.Errorf("webhook publishes rollout.requested (a route that names a rollout): %v", err)
	}
	const rendered = "sealane.deploy.rendered.sandbox.team-a.app"
	_, err = webhook.Publish(short(ctx, t), rendered, []byte("{}"))
	refused(t, e, "webhook publishes deploy.rendered", err, rendered)
	_, err = webhook.CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "renderer", FilterSubject: "sealane.deploy.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	refused(t, e, "webhook creates the renderer's consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+".renderer")
	_, err = webhook.OrderedConsumer(short(ctx, t), bus.DefaultStream, jetstream.OrderedConsumerConfig{})
	refused(t, e, "webhook reads the deploy stream", err, "CONSUMER.CREATE."+bus.DefaultStream)
	err = webhook.DeleteStream(short(ctx, t), bus.DefaultStream)
	refused(t, e, "webhook deletes the deploy stream", err, "STREAM.DELETE."+bus.DefaultStream)
	err = webhook.DeleteKeyValue(short(ctx, t), bus.DefaultDeliveryBucket)
	refused(t, e, "webhook deletes its delivery bucket", err, "STREAM.DELETE.KV_"+bus.DefaultDeliveryBucket)
	s, err := webhook.Stream(ctx, bus.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Purge(short(ctx, t))
	refused(t, e, "webhook purges the deploy stream", err, "STREAM.PURGE."+bus.DefaultStream)
	_, err = webhook.Publish(short(ctx, t), "$KV.sealane-deploys.forged", []byte("{}"))
	refused(t, e, "webhook writes deploy state", err, "$KV.sealane-deploys.forged")
	sub, err := e.connect(t, "webhook").SubscribeSync("_INBOX_renderer.>")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sub.NextMsg(time.Second)
	refused(t, e, "webhook reads the renderer's replies", err, "_INBOX_renderer.>")
	if n := streamCount(ctx, t, audit, succeeded) + streamCount(ctx, t, audit, rendered); n != 0 {
		t.Errorf("the stream holds %d events the webhook user forged", n)
	}
}
