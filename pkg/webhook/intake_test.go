package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/chart"
	"github.com/sealane/sealane/pkg/githook"
	"github.com/sealane/sealane/pkg/metrics"
	"github.com/sealane/sealane/pkg/metrics/metricstest"
	"github.com/sealane/sealane/test/harness"
)

// intake is a webhook intake on loopback: the real handler and server, the NATS sink on an
// in-process NATS with the bus topology.
type intake struct {
	base    string
	bus     *bus.Bus
	dir     string
	metrics *metrics.Metrics
	h       *Handler
}

const (
	ghOld   = "old-github-secret"
	ghNew   = "new-github-secret"
	hmacKey = "generic-secret"
)

// swKey is the Standard Webhooks key of the sw receiver (whsec_ + base64 of these bytes).
var swKey = []byte("0123456789abcdef0123456789abcdef")

const testConfig = `receivers:
  - id: gh
    type: github
    secrets:
      - file: %[1]s/gh-old
      - file: %[1]s/gh-new
    maxBodySize: 64Ki
    rateLimit: {perMinute: 6000, burst: 100}
    routes:
      - repository: acme/shop
        branches: [main]
        deploy:
          env: staging
          valuesFiles: [.helm/values-staging.yaml]
          set: ["image.tag={{ .ShortCommit }}"]
          cluster: c1
          namespace: shop
          release: shop
      - repository: acme/shop
        tags: ["v*"]
        deploy: {cluster: c1, namespace: shop-prod, release: shop, onQueued: supersede}
  - id: sw
    type: standard-webhooks
    secrets:
      - env: TEST_SW_SECRET
    routes:
      - repository: acme/*
        branches: ["*"]
        deploy: {cluster: c1, namespace: "review-{{ .Branch | slug }}", release: app}
  - id: bb
    type: bitbucket
    secrets: [{file: %[1]s/hmac}]
    routes:
      - repository: acme/app
        branches: [main]
        deploy: {cluster: c1, namespace: app, release: bb}
  - id: gen
    type: generic-hmac
    secrets: [{file: %[1]s/hmac}]
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c1, namespace: shop, release: gen}
  - id: gl
    type: gitlab
    secrets: [{env: TEST_SW_SECRET}]
    routes:
      - repository: acme/platform/app
        branches: [main]
        deploy: {cluster: c1, namespace: app, release: gl}
  - id: limited
    type: generic-hmac
    secrets:
      - file: %[1]s/hmac
    rateLimit: {perMinute: 1, burst: 1}
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c1, namespace: shop, release: limited}
  - id: fleet
    type: github
    secrets: [{file: %[1]s/gh-old}]
    routes:
      - repository: acme/shop
        branches: [main]
        deploy:
          set: ["image.tag={{ .ShortCommit }}"]
          namespace: "{{ .Branch | slug }}-{{ .Cluster }}"
          release: shop
          rollout:
            clusters: {selector: "env in (staging,prod)"}
            waves: [{name: canary, selector: env=staging, bakeTime: 1m}, {name: prod, selector: env=prod, maxParallel: 25%%}]
            onNewRollout: supersede
      - repository: acme/shop
        tags: ["v*"]
        deploy: {namespace: "shop-{{ .Labels.region }}", release: shop, rollout: {file: deploy/rollout.yaml}}
`

// newIntake starts an intake whose deploy stream drops duplicate message ids for only one
// second, so that a test can replay a delivery after JetStream's window.
func newIntake(t *testing.T, options ...func(*HandlerOptions)) *intake {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	dir := t.TempDir()
	for name, v := range map[string]string{"gh-old": ghOld + "\n", "gh-new": ghNew, "hmac": hmacKey} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(cfgFile, fmt.Appendf(nil, testConfig, dir), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == "TEST_SW_SECRET" {
			return "whsec_" + b64(swKey), true
		}
		return "", false
	}
	cfg, err := LoadConfig(cfgFile, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) }) // runs last
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	nc, err := bus.ConnectInProcess(ctx, srv, "webhook-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	log := zaptest.NewLogger(t)
	b, err := bus.New(ctx, nc, bus.DefaultOptions(), log)
	if err != nil {
		t.Fatal(err)
	}
	shortDuplicateWindow(ctx, t, b)
	deliveries, err := OpenDeliveries(ctx, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WebhookAudit(ctx); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	opts := HandlerOptions{BodyTimeout: 700 * time.Millisecond, Metrics: m, Limits: Limits{AuditInterval: 200 * time.Millisecond}}
	for _, o := range options {
		o(&opts)
	}
	h, err := NewHandler(cfg, &NATSSink{Bus: b, Deliveries: deliveries, Log: log}, log, opts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Listen(h, ServerOptions{Addr: "127.0.0.1:0", Metrics: m.Handler()}, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return &intake{base: "http://" + s.Addr().String(), bus: b, dir: dir, metrics: m, h: h}
}

// send posts body to receiver id with headers and returns the status, the decoded answer and
// the Retry-After header.
func (in *intake) send(t *testing.T, id string, h http.Header, body []byte) (int, answer, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, in.base+HookPrefix+id, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a answer
	_ = json.Unmarshal(raw, &a)
	return resp.StatusCode, a, resp.Header.Get("Retry-After")
}

type answer struct {
	Status     string   `json:"status"`
	Reason     string   `json:"reason"`
	DeployIDs  []string `json:"deployIds"`
	RolloutIDs []string `json:"rolloutIds"`
}

// counts returns how many events of each type token the deploy and webhook streams hold.
func (in *intake) counts(t *testing.T) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := map[string]int{}
	for stream, subjects := range map[string]string{bus.DefaultStream: "sealane.deploy.>", bus.DefaultWebhookStream: bus.WebhookSubject} {
		s, err := in.bus.JetStream().Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subjects))
		if err != nil {
			t.Fatal(err)
		}
		for subj, n := range info.State.Subjects {
			out[strings.Split(subj, ".")[2]] += int(n)
		}
	}
	return out
}

// countsWhen returns counts once done says they are complete (the intake answers before it
// publishes the request's audit event), or after 5 s.
func (in *intake) countsWhen(t *testing.T, done func(map[string]int) bool) map[string]int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := in.counts(t)
		if done(c) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// events returns the stored events of the deploy stream of type t, decoded.
func (in *intake) events(t *testing.T, typ events.Type) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, m := range in.messages(t, typ) {
		ev, err := events.Decode(m.Headers(), m.Data())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev.Data())
	}
	return out
}

// messages are the stored messages of type typ.
func (in *intake) messages(t *testing.T, typ events.Type) []jetstream.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream := bus.DefaultStream
	if typ.Webhook() {
		stream = bus.DefaultWebhookStream
	}
	c, err := in.bus.JetStream().OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.Filter{Type: typ}.Subject()}})
	if err != nil {
		t.Fatal(err)
	}
	var out []jetstream.Msg
	for {
		msgs, err := c.FetchNoWait(100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range msgs.Messages() {
			n++
			out = append(out, m)
		}
		if n == 0 {
			return out
		}
	}
}

const (
	shaA = "1111111111111111111111111111111111111111"
	shaB = "2222222222222222222222222222222222222222"
	zero = "0000000000000000000000000000000000000000"
)

func githubPush(ref, after string, deleted bool) []byte {
	return fmt.Appendf(nil, `{"ref":%q,"before":%q,"after":%q,"deleted":%t,"repository":{"full_name":"acme/shop","clone_url":"https://git.example.com/acme/shop.git"},"pusher":{"name":"alice"}}`,
		ref, zero, after, deleted)
}

func githubHeaders(secret, delivery string, body []byte) http.Header {
	return http.Header{"X-Github-Event": {"push"}, "X-Github-Delivery": {delivery},
		"X-Hub-Signature-256": {githook.SignGitHub([]byte(secret), body)}}
}

// TestIntakeAcceptsOnceAndAudits: a signed push is answered 202 with its deploy id once its
// request is in the stream, for exactly the pushed commit; a redelivery, at once and after
// JetStream's duplicate window, starts nothing and names the deploy; the second rotation
// secret is accepted; every request has its audit event.
func TestIntakeAcceptsOnceAndAudits(t *testing.T) {
	in := newIntake(t)
	body := githubPush("refs/heads/main", shaA, false)
	code, a, _ := in.send(t, "gh", githubHeaders(ghOld, "d-1", body), body)
	if code != http.StatusAccepted || a.Status != "accepted" || len(a.DeployIDs) != 1 {
		t.Fatalf("push: %d %+v, want 202 with one deploy id", code, a)
	}
	id := a.DeployIDs[0]
	reqs := in.events(t, events.DeployRequested)
	if len(reqs) != 1 {
		t.Fatalf("%d requests in the stream when the push was answered, want 1", len(reqs))
	}
	var req events.RequestedData
	if err := json.Unmarshal(reqs[0], &req); err != nil {
		t.Fatal(err)
	}
	g := req.Chart.Git
	if g == nil || g.Commit != shaA || g.URL != "https://git.example.com/acme/shop.git" || len(g.ValuesFiles) != 1 ||
		req.Git == nil || req.Git.Commit != shaA || req.Git.Branch != "main" || req.Git.Author != "alice" ||
		req.Target != (events.Target{Cluster: "c1", Namespace: "shop", Release: "shop"}) || req.Env != "staging" {
		t.Fatalf("request = %+v (chart git %+v, git %+v), want commit %s of acme/shop to c1/shop/shop", req, g, req.Git, shaA)
	}
	raw, err := in.bus.GetBlob(context.Background(), req.InputsRef)
	if err != nil {
		t.Fatal(err)
	}
	var inputs chart.Inputs
	if err := json.Unmarshal(raw, &inputs); err != nil || len(inputs.Set) != 1 || inputs.Set[0] != "image.tag=1111111" {
		t.Fatalf("inputs %s (%v), want image.tag=1111111", raw, err)
	}

	code, a, _ = in.send(t, "gh", githubHeaders(ghOld, "d-1", body), body)
	if code != http.StatusOK || a.Status != "duplicate" || !strings.Contains(a.Reason, id) {
		t.Fatalf("redelivery: %d %+v, want 200 duplicate of deploy %s", code, a, id)
	}
	time.Sleep(1500 * time.Millisecond) // past the stream's duplicate window
	code, a, _ = in.send(t, "gh", githubHeaders(ghNew, "d-1", body), body)
	if code != http.StatusOK || a.Status != "duplicate" {
		t.Fatalf("late redelivery: %d %+v, want 200 duplicate", code, a)
	}
	if n := len(in.events(t, events.DeployRequested)); n != 1 {
		t.Fatalf("%d requests after the redeliveries, want 1", n)
	}
	code, a, _ = in.send(t, "gh", githubHeaders(ghNew, "d-2", githubPush("refs/heads/main", shaB, false)), githubPush("refs/heads/main", shaB, false))
	if code != http.StatusAccepted || a.DeployIDs[0] == id {
		t.Fatalf("push signed with the second secret: %d %+v, want 202 with a new deploy", code, a)
	}
	resp, err := http.Get(in.base + "/metrics") // served beside /hooks/ and the probes
	if err != nil {
		t.Fatal(err)
	}
	page := metricstest.Parse(t, resp.Body)
	resp.Body.Close()
	if diff := metricstest.Diff(page, map[string]float64{
		metricstest.Key("sealane_webhook_requests_total", "provider", "github", "outcome", "accepted"):  2,
		metricstest.Key("sealane_webhook_requests_total", "provider", "github", "outcome", "duplicate"): 2,
		metricstest.Key("sealane_webhook_deploys_requested_total", "provider", "github"):                2,
	}); diff != "" {
		t.Errorf("/metrics:\n%s", diff)
	}
	c := in.countsWhen(t, func(c map[string]int) bool { return c["webhook_accepted"] == 2 && c["webhook_duplicate"] == 2 })
	if c["requested"] != 2 || c["webhook_accepted"] != 2 || c["webhook_duplicate"] != 2 {
		t.Fatalf("stream holds %v, want 2 requested, 2 webhook_accepted, 2 webhook_duplicate", c)
	}
	for _, raw := range in.events(t, events.WebhookAccepted) {
		var d events.WebhookData
		_ = json.Unmarshal(raw, &d)
		if d.Receiver != "gh" || d.Provider != "github" || d.Repository != "acme/shop" || d.Sender != "alice" || d.DeployID == "" || d.Status != 202 {
			t.Errorf("audit event %+v, want receiver, provider, repository, sender, deploy and status", d)
		}
		if bytes.Contains(raw, []byte(ghOld)) || bytes.Contains(raw, []byte(`"after"`)) {
			t.Errorf("audit event quotes a secret or the body: %s", raw)
		}
	}
}

// TestIntakeRefuses: each bad request gets its status, nothing but its audit event is
// published, and no goroutine is left behind (newIntake's cleanup).
func TestIntakeRefuses(t *testing.T) {
	in := newIntake(t)
	push := githubPush("refs/heads/main", shaA, false)
	sha1Sig := "sha1=" + strings.Repeat("ab", 20)
	tooBig := append(append([]byte(`{"ref":"`), bytes.Repeat([]byte("a"), 70<<10)...), `"}`...)
	now := time.Now()
	swBody := []byte(`{"repository":"acme/shop","url":"https://git.example.com/acme/shop.git","ref":"refs/heads/main","commit":"` + shaA + `"}`)
	swHeaders := func(ts time.Time) http.Header {
		return http.Header{"Webhook-Id": {"msg-1"}, "Webhook-Timestamp": {fmt.Sprint(ts.Unix())},
			"Webhook-Signature": {githook.SignStandard(swKey, "msg-1", ts, swBody)}}
	}
	truncated := push[:len(push)-10]
	cases := []struct {
		name    string
		id      string
		method  string
		h       http.Header
		body    []byte
		status  int
		reason  string
		ignored bool
	}{
		{"wrong secret", "gh", "", githubHeaders("nope", "r-1", push), push, 401, "signature", false},
		{"sha-1 only", "gh", "", http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature": {sha1Sig}}, push, 401, "signature", false},
		{"sha1= in the 256 header", "gh", "", http.Header{"X-Github-Event": {"push"}, "X-Hub-Signature-256": {sha1Sig}}, push, 401, "signature", false},
		{"expired standard webhooks timestamp", "sw", "", swHeaders(now.Add(-6 * time.Minute)), swBody, 401, "signature", false},
		{"future standard webhooks timestamp", "sw", "", swHeaders(now.Add(6 * time.Minute)), swBody, 401, "signature", false},
		{"oversize body", "gh", "", githubHeaders(ghOld, "r-2", tooBig), tooBig, 413, "size", false},
		{"not JSON", "gh", "", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, []byte("payload=x"), 415, "content type", false},
		{"truncated JSON", "gh", "", githubHeaders(ghOld, "r-3", truncated), truncated, 400, "malformed", false},
		{"unknown receiver", "nobody", "", githubHeaders(ghOld, "r-4", push), push, 404, "", false},
		{"GET", "gh", http.MethodGet, nil, nil, 405, "method", false},
		{"branch deletion", "gh", "", githubHeaders(ghOld, "r-5", githubPush("refs/heads/main", zero, true)), githubPush("refs/heads/main", zero, true), 200, "deletion", true},
		{"unrouted branch", "gh", "", githubHeaders(ghOld, "r-6", githubPush("refs/heads/dev", shaA, false)), githubPush("refs/heads/dev", shaA, false), 200, "no route", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var code int
			var a answer
			if c.method != "" {
				resp, err := http.Get(in.base + HookPrefix + c.id)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				code = resp.StatusCode
			} else {
				code, a, _ = in.send(t, c.id, c.h, c.body)
			}
			if code != c.status {
				t.Fatalf("status %d (%+v), want %d", code, a, c.status)
			}
			if c.status == 401 && a.Reason != "unauthorized" {
				t.Errorf("401 reason %q: must say nothing about which part failed", a.Reason)
			}
			if c.ignored && a.Status != "ignored" {
				t.Errorf("answer %+v, want ignored", a)
			}
		})
	}
	// A slow body: headers, a few bytes, then nothing until the intake gives up.
	if got := slowBody(t, in.base); !strings.HasPrefix(got, "HTTP/1.1 408") {
		t.Errorf("slow body answered %q, want 408", got)
	}
	// A refusal is counted before its answer: a summary published now holds it.
	in.h.refused.Flush()
	// The rate limit: the second delivery within the minute is refused, with Retry-After.
	gen := []byte(`{"repository":"acme/shop","url":"https://git.example.com/acme/shop.git","ref":"refs/heads/main","commit":"` + shaA + `"}`)
	sig := http.Header{"X-Signature": {githook.SignHMAC([]byte(hmacKey), gen)}}
	if code, a, _ := in.send(t, "limited", sig, gen); code != http.StatusAccepted {
		t.Fatalf("first limited delivery: %d %+v", code, a)
	}
	code, _, retry := in.send(t, "limited", sig, gen)
	if code != http.StatusTooManyRequests || retry == "" {
		t.Fatalf("second limited delivery: %d, Retry-After %q; want 429 with Retry-After", code, retry)
	}
	in.h.refused.Flush()
	c := in.countsWhen(t, func(c map[string]int) bool { return c["webhook_rejected"] >= 1 && c["webhook_ignored"] >= 2 })
	if c["requested"] != 1 || c["webhook_accepted"] != 1 || c["webhook_ignored"] != 2 {
		t.Errorf("streams hold %v, want the one accepted request and an audit event per ignored request (2)", c)
	}
	want := map[string]int{"gh signature": 3, "sw signature": 2, "gh size": 1, "gh content type": 1, "gh malformed": 1,
		"(unknown) unknown receiver": 1, "gh method": 1, "gh timeout": 1, "limited rate": 1}
	got := map[string]int{}
	for _, raw := range in.events(t, events.WebhookRejected) {
		var d events.WebhookData
		_ = json.Unmarshal(raw, &d)
		if d.Refused == nil {
			t.Fatalf("rejected audit event %s is no summary: refusals are summed up per interval", raw)
		}
		for _, n := range d.Refused.Counts {
			if n.Status < 400 {
				t.Errorf("refusal count %+v has no status", n)
			}
			got[n.Receiver+" "+n.Reason] += n.Count
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusals summed up (-want +got):\n%s", diff)
	}
}

// slowBody sends a request whose body stalls and returns the status line of the answer.
func slowBody(t *testing.T, base string) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"ref\":")
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line := make([]byte, 12)
	n, _ := io.ReadFull(conn, line)
	return string(line[:n])
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// shortDuplicateWindow makes the deploy stream drop duplicate message ids for one second only
// (serve refuses less than two minutes), so that a test can replay a delivery past it.
func shortDuplicateWindow(ctx context.Context, t *testing.T, b *bus.Bus) {
	t.Helper()
	s, err := b.JetStream().Stream(ctx, bus.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = time.Second
	if _, err := b.JetStream().UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}
