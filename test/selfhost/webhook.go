package selfhost

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/githook"

	"github.com/sealane/sealane/test/harness"
	"github.com/sealane/sealane/test/podrun"
)

// StartWebhook runs the chart's webhook intake Deployment (<release>-webhook) of the render as
// one process with the container's command, rendered environment and mounts (its receivers
// ConfigMap and the Secrets it mounts, as files), given what a pod gets from its
// surroundings: the NATS service's address and a port of its own. It returns the intake's
// base URL once /readyz answers.
func StartWebhook(t *testing.T, r StageRun) string {
	t.Helper()
	d, ok := r.Objects.Deployments[r.Release+"-webhook"]
	if !ok {
		t.Fatalf("the render has no Deployment %s-webhook (webhook.enabled)", r.Release)
	}
	spec := d.Spec.Template.Spec
	proc, err := r.Objects.Container(spec, spec.Containers[0], podrun.Pod{Name: d.Name + "-0", Namespace: r.Namespace,
		Root: t.TempDir(), Binaries: r.Binaries})
	if err != nil {
		t.Fatal(err)
	}
	// The receivers name their secret files by the pod's mount paths, as podrun maps them in
	// arguments and environment.
	config := procEnv(proc, "SEALANE_WEBHOOK_CONFIG")
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatalf("the webhook's receivers file: %v", err)
	}
	local := strings.ReplaceAll(string(b), "/etc/sealane/webhook/", filepath.Join(proc.Root, "etc", "sealane", "webhook")+"/")
	if err := os.WriteFile(config, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	setEnv(&proc, "SEALANE_NATS_URL", r.NATSURL)
	setEnv(&proc, "SEALANE_WEBHOOK_ADDR", addr)
	running := podrun.Start(t, proc)
	waitHTTP(harness.Context(t, time.Minute), t, "http://"+addr+"/readyz", running)
	return "http://" + addr
}

// webhookSecretName is the existing Secret TestChartServices mounts into the webhook intake
// (webhook.secrets); its key "secret" is the github receiver's secret.
const webhookSecretName = "selfhost-github-hook"

// webhookValues enables the chart's webhook intake with one github receiver whose secret is a
// file of the mounted Secret webhookSecretName, routing pushes to main of acme/app to release
// "hooked" in namespace team of cluster — a chart from a repository the renderer will not fetch:
// the test checks the intake, not a deploy.
func webhookValues(cluster, team string) map[string]any {
	return map[string]any{
		"enabled": true,
		"secrets": []string{webhookSecretName},
		"config": map[string]any{"receivers": []any{map[string]any{
			"id": "selfhost-github", "type": "github",
			"secrets": []any{map[string]string{"file": "/etc/sealane/webhook/" + webhookSecretName + "/secret"}},
			"routes": []any{map[string]any{
				"repository": "acme/app", "branches": []string{"main"},
				"deploy": map[string]any{"cluster": cluster, "namespace": team, "release": "hooked",
					"set": []string{"image.tag={{ .ShortCommit }}"}},
			}},
		}}},
	}
}

// procEnv is the value of key in p's environment ("" when unset).
func procEnv(p podrun.Proc, key string) string {
	for _, kv := range p.Env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// createWebhookSecret creates the Secret webhookSecretName with a random github secret in
// namespace and returns its manifest (for RenderWith) and the secret.
func createWebhookSecret(t *testing.T, cs kubernetes.Interface, namespace string) (manifest, secret string) {
	t.Helper()
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	secret = hex.EncodeToString(b)
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: webhookSecretName, Namespace: namespace},
		Data:       map[string][]byte{"secret": []byte(secret)}}
	if _, err := cs.CoreV1().Secrets(namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the webhook's Secret: %v", err)
	}
	y, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(y), secret
}

// checkWebhook sends the intake at base a signed GitHub push to main of acme/app, which must
// be accepted (202) with its deploy request and webhook_accepted event in the deploy stream,
// and the same push with a wrong signature, which must be refused (401). It reads the stream
// as the chart's audit user.
func checkWebhook(t *testing.T, base, secret string, objs *podrun.Objects, natsURL, cluster, team string) {
	t.Helper()
	ctx := harness.Context(t, time.Minute)
	commit := strings.Repeat("c0ffee", 6) + "c0ff"
	body := fmt.Appendf(nil, `{"ref":"refs/heads/main","before":"%s","after":"%s",`+
		`"repository":{"full_name":"acme/app","clone_url":"https://git.example.invalid/acme/app.git"},`+
		`"pusher":{"name":"octocat"}}`, strings.Repeat("0", 39)+"1", commit)
	post := func(delivery, sig string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/hooks/selfhost-github", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST to the webhook intake: %v", err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	code, answer := post("selfhost-1", githook.SignGitHub([]byte(secret), body))
	var accepted struct{ DeployIDs []string }
	if code != http.StatusAccepted || json.Unmarshal([]byte(answer), &accepted) != nil || len(accepted.DeployIDs) != 1 {
		t.Fatalf("signed push: %d %s, want 202 with one deploy id", code, answer)
	}
	if code, answer := post("selfhost-2", githook.SignGitHub([]byte("not the secret"), body)); code != http.StatusUnauthorized {
		t.Errorf("push with a wrong signature: %d %s, want 401", code, answer)
	}

	nc, err := nats.Connect(natsURL, nats.UserInfo("audit", objs.Secret("sealane-nats-users", "audit")))
	if err != nil {
		t.Fatalf("connect as the audit user: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	target := "." + cluster + "." + team + ".hooked"
	// the request names the pushed commit, the audit event (on the webhook stream) the deploy
	// the answer named
	for subject, want := range map[string]string{"sealane.deploy.requested" + target: commit,
		"sealane.webhook.webhook_accepted" + target: accepted.DeployIDs[0]} {
		name := "SEALANE_DEPLOY"
		if strings.HasPrefix(subject, "sealane.webhook.") {
			name = "SEALANE_WEBHOOK"
		}
		stream, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for {
			m, err := stream.GetLastMsgForSubject(ctx, subject)
			if err == nil {
				ev, err := events.Decode(m.Header, m.Data)
				if err != nil || ev.Source() != "/sealane/webhook/selfhost-github" || !bytes.Contains(m.Data, []byte(want)) {
					t.Errorf("%s: %v, source %q, want the receiver's event naming %s:\n%s", subject, err, ev.Source(), want, m.Data)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("no %s in the deploy stream: %v", subject, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}
