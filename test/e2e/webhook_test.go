package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nkeys"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/githook"
	"github.com/sealane/sealane/pkg/gitsource/gittest"
	"github.com/sealane/sealane/test/harness"
)

// hookProject is a werf project whose ConfigMap says which commit's values it was rendered
// from, and whose Deployment's pods never become ready when .Values.unready is true.
func hookProject(message string) map[string]string {
	return map[string]string{
		"werf.yaml":                 "project: shop\nconfigVersion: 1\n",
		".helm/Chart.yaml":          "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
		".helm/values.yaml":         "message: default\nunready: false\nimage:\n  tag: latest\n",
		".helm/values-staging.yaml": "message: " + message + "\n",
		".helm/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  message: {{ .Values.message | quote }}
  tag: {{ .Values.image.tag | quote }}
`,
		".helm/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels:
        app: {{ .Release.Name }}
        sealane.dev/test-unready: {{ .Values.unready | quote }}
    spec:
      containers:
        - name: app
          image: registry.example.com/shop:{{ .Values.image.tag }}
`,
	}
}

// hookSecrets are the receivers' secrets, written to files and one to the environment.
var hookSecrets = map[string]string{
	"github": "gh-secret", "gitlab": "gl-token", "bitbucket": "bb-secret", "generic": "generic-secret",
}

// swKey is the Standard Webhooks key of the standard-webhooks, gitlab-signed and cloudevents receivers.
var swKey = []byte("sealane-e2e-standard-webhooks-key")

// webhookConfig routes acme/shop's main branch, for each receiver, to its own release in ns.
func webhookConfig(dir, ns, cluster string) string {
	var b strings.Builder
	b.WriteString("receivers:\n")
	route := func(release, extra string) string {
		return fmt.Sprintf(`    routes:
      - repository: acme/shop
        branches: [main]
        deploy:
          env: staging
          valuesFiles: [.helm/values-staging.yaml]
          set: ["image.tag={{ .ShortCommit }}"]
          cluster: %s
          namespace: %s
          release: %s
%s`, cluster, ns, release, extra)
	}
	for _, r := range []struct{ id, typ, secret, extra string }{
		{"github", "github", "file: " + filepath.Join(dir, "github"), ""},
		{"gitlab", "gitlab", "file: " + filepath.Join(dir, "gitlab"), ""},
		{"gitlab-signed", "gitlab", "env: E2E_WHSEC", ""},
		{"bitbucket", "bitbucket", "file: " + filepath.Join(dir, "bitbucket"), ""},
		{"generic", "generic-hmac", "file: " + filepath.Join(dir, "generic"), ""},
		{"standard", "standard-webhooks", "env: E2E_WHSEC", ""},
		{"cloudevents", "cloudevents", "env: E2E_WHSEC", ""},
		{"queue", "github", "file: " + filepath.Join(dir, "github"), ""},
		{"supersede", "github", "file: " + filepath.Join(dir, "github"), "          onQueued: supersede\n          timeout: 20s\n"},
	} {
		fmt.Fprintf(&b, "  - id: %s\n    type: %s\n    secrets:\n      - %s\n", r.id, r.typ, r.secret)
		b.WriteString(route("wh-"+r.id, r.extra))
	}
	return b.String()
}

// hookIntake is a shared pipeline with the webhook intake: nats-server and `sealane serve all`.
type hookIntake struct {
	natsURL, base string
	repo          *gittest.Repo
	ns, cluster   string
}

func startHookIntake(t *testing.T) *hookIntake {
	t.Helper()
	sharePayloadKey(t)
	gs := gittest.NewServer(t)
	repo := gs.Init(t, "shop") // served as …/shop.git
	repo.Commit(t, hookProject("initial"), "initial")
	in := &hookIntake{repo: repo, ns: namespace(t), cluster: clusterName(t)}
	dir := t.TempDir()
	for name, s := range hookSecrets {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(cfg, []byte(webhookConfig(dir, in.ns, in.cluster)), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := run(t, time.Minute, sealaneBin, "webhook", "validate", cfg); r.code == 0 {
		t.Fatalf("validate passed without $E2E_WHSEC set:\n%s", r.out) // an unset secret is named
	}
	// the renderer takes only signed requests; the intake signs with its own key
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile, keysFile := filepath.Join(dir, "webhook.nk"), filepath.Join(dir, "client-keys.yaml")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keysFile, []byte("git-webhooks: "+pub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in.natsURL = startNATS(t)
	port := harness.FreePort(t)
	in.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	gitHost := strings.SplitN(strings.TrimPrefix(repo.URL(), "http://"), "/", 2)[0]
	startProcess(t, "serve all", sealaneBin, append(os.Environ(), "E2E_WHSEC=whsec_"+base64.StdEncoding.EncodeToString(swKey)),
		"serve", "all", "--nats", in.natsURL, "--kubeconfig", kubeconfig, "--log-level", "info",
		"--webhook-config", cfg, "--webhook-addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--allow-chart-source", "http://"+gitHost+"/**", "--git-cache-dir", t.TempDir(),
		"--client-keys", keysFile, "--webhook-signing-key", seedFile)
	waitTCP(t, port)
	return in
}

// push is one push as a test sends it.
type push struct {
	receiver, sha, before, ref string
	delivery                   string
}

// send delivers p to its receiver the way that receiver's provider does, signed, and returns
// the status and the answer.
func (in *hookIntake) send(t *testing.T, p push) (int, hookAnswer) {
	t.Helper()
	if p.ref == "" {
		p.ref = "refs/heads/main"
	}
	if p.delivery == "" {
		p.delivery = uuid.NewString()
	}
	body, h := providerRequest(in.repo.URL(), p)
	req, err := http.NewRequest(http.MethodPost, in.base+"/hooks/"+p.receiver, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a hookAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("answer %q: %v", raw, err)
	}
	return resp.StatusCode, a
}

type hookAnswer struct {
	Status     string   `json:"status"`
	Reason     string   `json:"reason"`
	DeployIDs  []string `json:"deployIds"`
	RolloutIDs []string `json:"rolloutIds"`
}

// providerRequest builds a push delivery of p's receiver's provider for the repository at
// cloneURL (which ends in .git), signed with the receiver's secret.
func providerRequest(cloneURL string, p push) ([]byte, http.Header) {
	branch := strings.TrimPrefix(p.ref, "refs/heads/")
	h := http.Header{"Content-Type": {"application/json"}}
	generic := fmt.Appendf(nil, `{"event":"push","repository":"acme/shop","url":%q,"ref":%q,"before":%q,"commit":%q,"sender":"alice"}`,
		cloneURL, p.ref, p.before, p.sha)
	standard := func(id string, body []byte) {
		now := time.Now()
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", fmt.Sprint(now.Unix()))
		h.Set("webhook-signature", githook.SignStandard(swKey, id, now, body))
	}
	switch p.receiver {
	case "github", "queue", "supersede", "fleet":
		body := fmt.Appendf(nil, `{"ref":%q,"before":%q,"after":%q,"deleted":false,"repository":{"full_name":"acme/shop","clone_url":%q},"pusher":{"name":"alice"}}`,
			p.ref, p.before, p.sha, cloneURL)
		h.Set("X-GitHub-Event", "push")
		h.Set("X-GitHub-Delivery", p.delivery)
		h.Set("X-Hub-Signature-256", githook.SignGitHub([]byte(hookSecrets["github"]), body))
		return body, h
	case "gitlab", "gitlab-signed":
		body := fmt.Appendf(nil, `{"object_kind":"push","ref":%q,"before":%q,"after":%q,"user_username":"alice","project":{"path_with_namespace":"acme/shop","git_http_url":%q}}`,
			p.ref, p.before, p.sha, cloneURL)
		h.Set("X-Gitlab-Event", "Push Hook")
		if p.receiver == "gitlab" {
			h.Set("X-Gitlab-Token", hookSecrets["gitlab"])
			h.Set("Idempotency-Key", p.delivery)
		} else {
			standard(p.delivery, body)
		}
		return body, h
	case "bitbucket":
		body := fmt.Appendf(nil, `{"push":{"changes":[{"new":{"type":"branch","name":%q,"target":{"hash":%q}},"old":{"type":"branch","name":%q,"target":{"hash":%q}}}]},"repository":{"full_name":"acme/shop","links":{"html":{"href":%q}}},"actor":{"username":"alice"}}`,
			branch, p.sha, branch, p.before, strings.TrimSuffix(cloneURL, ".git"))
		h.Set("X-Event-Key", "repo:push")
		h.Set("X-Request-UUID", p.delivery)
		h.Set("X-Hub-Signature", githook.SignHMAC([]byte(hookSecrets["bitbucket"]), body))
		return body, h
	case "generic":
		h.Set("X-Delivery-Id", p.delivery)
		h.Set("X-Signature", githook.SignHMAC([]byte(hookSecrets["generic"]), generic))
		return generic, h
	case "standard":
		standard(p.delivery, generic)
		return generic, h
	case "cloudevents":
		h.Set("ce-id", p.delivery)
		h.Set("ce-type", "dev.sealane.git.push")
		h.Set("ce-source", "/e2e/git")
		h.Set("ce-specversion", "1.0")
		standard(p.delivery, generic)
		return generic, h
	}
	panic("unknown receiver " + p.receiver)
}

// waitDeployed waits until release rel has n revisions, the last one not pending, and returns
// the history.
func (in *hookIntake) waitDeployed(t *testing.T, rel string, n int) []helmRevision {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		r := helm(t, "history", rel, "-n", in.ns, "-o", "json")
		var revs []helmRevision
		if r.code == 0 && json.Unmarshal([]byte(r.out), &revs) == nil && len(revs) >= n &&
			!strings.HasPrefix(revs[len(revs)-1].Status, "pending") {
			return revs
		}
		time.Sleep(500 * time.Millisecond)
	}
	r := run(t, time.Minute, sealaneBin, "events", "--nats", in.natsURL, "--release", rel)
	t.Fatalf("release %s: no %d finished revisions within 3m; its events:\n%s", rel, n, r.out)
	return nil
}

// checkCommit checks that release rel's objects say they were deployed from sha with message.
func (in *hookIntake) checkCommit(t *testing.T, rel, sha, message string) {
	t.Helper()
	cm, err := clientset(t).CoreV1().ConfigMaps(in.ns).Get(context.Background(), rel+"-cm", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Annotations["ci.werf.io/commit"]; got != sha {
		t.Errorf("%s: ConfigMap annotation ci.werf.io/commit = %q, want the pushed commit %s", rel, got, sha)
	}
	if cm.Data["message"] != message || cm.Data["tag"] != sha[:7] {
		t.Errorf("%s: ConfigMap data %v, want message %q (that commit's values file) and tag %s ({{ .ShortCommit }})", rel, cm.Data, message, sha[:7])
	}
	records, err := clientset(t).CoreV1().Secrets(in.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + rel})
	if err != nil || len(records.Items) == 0 {
		t.Fatalf("%s: release records %v", rel, err)
	}
	if l := records.Items[len(records.Items)-1].Labels; l["sealane.dev/requested-by"] != "git-webhooks" || l["sealane.dev/requested-by-verified"] != "true" {
		t.Errorf("%s: release record labels %v, want requested-by git-webhooks, verified (the intake's signing key)", rel, l)
	}
}

// TestWebhookDeploysPushedCommit commits to a real repository served by git http-backend and
// delivers a signed push for each provider while later commits move the branch on: each
// deploy runs exactly its pushed commit (objects annotated with it, that commit's values
// file). A redelivery starts nothing.
func TestWebhookDeploysPushedCommit(t *testing.T) {
	in := startHookIntake(t)
	receivers := []string{"github", "gitlab", "gitlab-signed", "bitbucket", "generic", "standard", "cloudevents"}
	shas := map[string]string{}
	var firstDelivery push
	for _, rcv := range receivers {
		sha := in.repo.Commit(t, map[string]string{".helm/values-staging.yaml": "message: from-" + rcv + "\n"}, "values for "+rcv)
		shas[rcv] = sha
		p := push{receiver: rcv, sha: sha, before: strings.Repeat("0", 40)}
		if rcv == "github" {
			p.delivery = "e2e-github-1"
			firstDelivery = p
		}
		if code, a := in.send(t, p); code != http.StatusAccepted || len(a.DeployIDs) != 1 {
			t.Fatalf("%s push: %d %+v, want 202 with a deploy id", rcv, code, a)
		}
	}
	code, a := in.send(t, firstDelivery)
	if code != http.StatusOK || a.Status != "duplicate" {
		t.Errorf("redelivery: %d %+v, want 200 duplicate", code, a)
	}
	for _, rcv := range receivers {
		hist := in.waitDeployed(t, "wh-"+rcv, 1)
		if len(hist) != 1 || hist[0].Status != "deployed" {
			t.Errorf("wh-%s history %+v, want one deployed revision", rcv, hist)
			continue
		}
		in.checkCommit(t, "wh-"+rcv, shas[rcv], "from-"+rcv)
	}
	counts := map[string]int{}
	for _, e := range streamEvents(t, in.natsURL, "wh-github") {
		counts[events.Type(e.Type).Token()]++
	}
	// the audit events are on the webhook stream
	r := run(t, time.Minute, sealaneBin, "events", "--nats", in.natsURL, "--release", "wh-github",
		"--type", "webhook_accepted", "--type", "webhook_duplicate", "-o", "json")
	if r.code != 0 {
		t.Fatalf("sealane events --type webhook_*: exit %d:\n%s", r.code, r.out)
	}
	for _, e := range streamEventsOf(t, r.out) {
		counts[events.Type(e.Type).Token()]++
	}
	if counts["requested"] != 1 || counts["webhook_accepted"] != 1 || counts["webhook_duplicate"] != 1 {
		t.Errorf("wh-github events %v, want one request, one webhook_accepted, one webhook_duplicate", counts)
	}
}

// TestWebhookQueueAndSupersede pushes twice quickly: with `queue` both commits deploy, in push
// order; with `supersede` a push arriving while an earlier one waits drops the waiting one,
// and only the newest deploys after the running one.
func TestWebhookQueueAndSupersede(t *testing.T) {
	in := startHookIntake(t)
	before := strings.Repeat("0", 40)
	x := in.repo.Commit(t, map[string]string{".helm/values-staging.yaml": "message: commit-x\n"}, "x")
	y := in.repo.Commit(t, map[string]string{".helm/values-staging.yaml": "message: commit-y\n"}, "y")
	for _, sha := range []string{x, y} {
		if code, a := in.send(t, push{receiver: "queue", sha: sha, before: before}); code != http.StatusAccepted {
			t.Fatalf("queue push %s: %d %+v", sha, code, a)
		}
	}
	hist := in.waitDeployed(t, "wh-queue", 2)
	if len(hist) != 2 || hist[0].Status != "superseded" || hist[1].Status != "deployed" {
		t.Fatalf("wh-queue history %+v, want 1 superseded, 2 deployed", hist)
	}
	for rev, sha := range map[int]string{1: x, 2: y} {
		r := helm(t, "get", "manifest", "wh-queue", "-n", in.ns, "--revision", fmt.Sprint(rev))
		if !strings.Contains(r.out, fmt.Sprintf("tag: %q", sha[:7])) {
			t.Errorf("wh-queue revision %d manifest is not of commit %s:\n%s", rev, sha, r.out)
		}
	}
	in.checkCommit(t, "wh-queue", y, "commit-y")

	// supersede: a holder that never becomes ready, one push queued behind it, then the newest.
	h := in.repo.Commit(t, map[string]string{".helm/values-staging.yaml": "message: holder\nunready: true\n"}, "holder")
	if code, a := in.send(t, push{receiver: "supersede", sha: h, before: before}); code != http.StatusAccepted {
		t.Fatalf("holder push: %d %+v", code, a)
	}
	target := events.Target{Cluster: in.cluster, Namespace: in.ns, Release: "wh-supersede"}
	m := leaseManager(t, in.natsURL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if !eventually(ctx, 60*time.Second, func(ctx context.Context) bool { l, _ := m.Get(ctx, target); return l != nil }) {
		t.Fatal("the holder never took the release lease")
	}
	q := in.repo.Commit(t, map[string]string{".helm/values-staging.yaml": "message: queued\n"}, "queued")
	if code, _ := in.send(t, push{receiver: "supersede", sha: q, before: before}); code != http.StatusAccepted {
		t.Fatal("queued push not accepted")
	}
	if !eventually(ctx, 30*time.Second, func(ctx context.Context) bool { l, _ := m.Queued(ctx, target); return len(l) == 1 }) {
		t.Fatal("the second push was not queued behind the holder")
	}
	z := in.repo.Commit(t, map[string]string{".helm/values-staging.yaml": "message: newest\n"}, "newest")
	if code, _ := in.send(t, push{receiver: "supersede", sha: z, before: before}); code != http.StatusAccepted {
		t.Fatal("newest push not accepted")
	}
	hist = in.waitDeployed(t, "wh-supersede", 2)
	if len(hist) != 2 || hist[0].Status != "failed" || hist[1].Status != "deployed" {
		t.Fatalf("wh-supersede history %+v, want 1 failed (the never-ready holder), 2 deployed (the newest; the queued push dropped)", hist)
	}
	in.checkCommit(t, "wh-supersede", z, "newest")
}
