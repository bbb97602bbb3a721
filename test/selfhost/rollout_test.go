package selfhost

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// rolloutSigningSecretName is the Secret with the nkey seed that signs the rollout
// coordinator's deploy requests (rollout.signingKey); its public key is the renderer's client
// rolloutSigner.
const (
	rolloutSigningSecretName = "selfhost-rollout-signing"
	rolloutSigner            = "rollouts"
)

// rolloutKey is a fresh user nkey for the coordinator: its public key and its seed.
func rolloutKey(t *testing.T) (pub string, seed []byte) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ = kp.PublicKey()
	seed, _ = kp.Seed()
	return pub, seed
}

// rolloutValues turns on the coordinator's signing key and checks the clusters every 2 s
// (the test registers its cluster after the coordinator started).
func rolloutValues() map[string]any {
	return map[string]any{"clusterCheckInterval": "2s", "signingKey": map[string]any{"secretName": rolloutSigningSecretName}}
}

// createRolloutSigningSecret creates the Secret rolloutSigningSecretName holding seed in
// namespace and returns its manifest (for RenderWith).
func createRolloutSigningSecret(t *testing.T, cs kubernetes.Interface, namespace string, seed []byte) string {
	t.Helper()
	s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: rolloutSigningSecretName, Namespace: namespace},
		Data:       map[string][]byte{"seed": seed}}
	if _, err := cs.CoreV1().Secrets(namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the rollout coordinator's signing Secret: %v", err)
	}
	y, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(y)
}

// checkRollout starts a fleet rollout of a one-ConfigMap chart with values (copied by the
// coordinator to the deploy's inputs) to namespace team of cluster as the
// chart's client user (`sealane rollout start`, which follows it to its end) through the
// chart's coordinator r: the release is deployed with the values, its record names the
// coordinator's signing key as the verified requester, and no NATS node logged a permission
// violation of the coordinator.
func checkRollout(t *testing.T, r StageRun, nodes []NATSNode, cluster, team string) {
	t.Helper()
	dir := t.TempDir()
	spec := filepath.Join(dir, "rollout.yaml")
	for name, text := range map[string]string{"chart/Chart.yaml": "apiVersion: v2\nname: fleet\nversion: 0.1.0\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fleet}\ndata: {greeting: '{{ .Values.greeting }}'}\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	body := "chart: {path: chart}\nrelease: fleet\nnamespace: " + team + "\ntimeout: 2m\nvalues: {greeting: hello}\n" +
		"clusters: {names: [" + cluster + "]}\nwaves:\n  - {name: all, selector: \"\"}\n"
	if err := os.WriteFile(spec, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(env.Sealane, "rollout", "start", "-f", spec, "--nats", r.NATSURL,
		"--home-kubeconfig", r.Kubeconfig, "--sealane-namespace", r.Namespace, "--timeout", "3m")
	cmd.Env = append(os.Environ(), "SEALANE_NATS_USER=client", "SEALANE_NATS_PASSWORD="+r.Objects.Secret("sealane-nats-users", "client"),
		"SEALANE_PAYLOAD_KEY="+r.Objects.Secret("sealane-payload-key", "key"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sealane rollout start as the chart's client user: %v\n%s", err, out)
	}
	t.Logf("rollout:\n%s", out)
	records, err := r.Clientset.CoreV1().Secrets(team).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=fleet"})
	if err != nil || len(records.Items) != 1 {
		t.Fatalf("the rollout's release records: %v, %v", records, err)
	}
	if l := records.Items[0].Labels; l["sealane.dev/requested-by"] != rolloutSigner || l["sealane.dev/requested-by-verified"] != "true" ||
		l["status"] != "deployed" {
		t.Errorf("the rollout's release record labels %v: want deployed, requested-by %s, verified", l, rolloutSigner)
	}
	cm, err := r.Clientset.CoreV1().ConfigMaps(team).Get(context.Background(), "fleet", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "hello" {
		t.Errorf("the rollout's ConfigMap: %v, %v; want the spec's values", cm, err)
	}
	for _, n := range nodes {
		for _, line := range strings.Split(n.Output(), "\n") {
			if strings.Contains(line, "sealane-rollout") && strings.Contains(line, "Violation") {
				t.Errorf("the coordinator was refused: %s", line)
			}
		}
	}
}
