package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/secret"
)

const (
	werfKey  = "5e4f4ad1b9c04c2f8f3bfcbc1f4b2a11"
	otherKey = "00112233445566778899aabbccddeeff"
)

var canaries = []string{"CANARY-db-password-7f3a", "CANARY-tls-key-91bc"}

// werfProject copies testdata/werfapp to a temp dir and adds its secrets encrypted with key:
// .helm/secret-values.yaml (werf format), .helm/secret/tls.key, and a --secret-values file
// in the v2 format. It returns the project dir and the --secret-values file.
func werfProject(t *testing.T, key string) (dir, extraSecrets string) {
	t.Helper()
	k, err := secret.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	src := filepath.Join(repoRoot, "test/e2e/testdata/werfapp")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	plain := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(repoRoot, "test/e2e/testdata/werfapp-secrets", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	write := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vals, err := secret.EncryptValues("secret-values.yaml", plain("secret-values.yaml"), k, secret.FormatWerf)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, ".helm", "secret-values.yaml"), vals)
	tls, err := secret.EncryptFile("tls.key", plain("tls.key"), k, secret.FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(dir, ".helm", "secret", "tls.key"), tls)
	extra, err := secret.EncryptValues("extra-secret-values.yaml", plain("extra-secret-values.yaml"), k, secret.FormatV2)
	if err != nil {
		t.Fatal(err)
	}
	extraSecrets = filepath.Join(t.TempDir(), "extra-secret-values.yaml")
	write(extraSecrets, extra)
	return dir, extraSecrets
}

// TestDeployWerfProject deploys a werf project through the pipeline with encrypted secret
// values and files, service values, `lookup` and capabilities from the cluster, and auto
// annotations; the release manifest is what `sealane render` prints for the same flags.
func TestDeployWerfProject(t *testing.T) {
	ctx := context.Background()
	cs := clientset(t)
	dir, extraSecrets := werfProject(t, werfKey)
	// The namespace is the werf default <project>-<env>, slugified; a unique env keeps runs apart.
	env := "Stage_" + strings.TrimPrefix(namespace(t), "e2e-")
	flags := []string{"--env", env, "--project", "shop", "--secret-key", werfKey, "--secret-values", extraSecrets,
		"--image", "web=registry.example.com/shop/web:1.4.2", "--git-commit", "0f3a9c1", "--ci-author", "ci-bot",
		"--add-annotation", "team=payments", "--add-label", "tier=web"}

	names := sealane(t, "", "slugify", "--format", "namespace", "shop-"+env)
	ns := strings.TrimSpace(names.out)
	if ns == "" || ns == "shop-"+env {
		t.Fatalf("slugify gave %q for shop-%s", ns, env)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	// lookup reads this object from the cluster during the render.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info"}, Data: map[string]string{"region": "eu-west-7"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	data := t.TempDir()
	r := sealane(t, data, append([]string{"deploy", dir, "--timeout", "2m"}, flags...)...)
	if r.code != 0 {
		t.Fatalf("deploy exit %d:\n%s", r.code, r.out)
	}
	release := ns // release and namespace share the default name (both under 53 characters)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "shop-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"env": env, "werfEnv": env, "project": "shop", "namespace": ns,
		"image": "registry.example.com/shop/web:1.4.2", "commit": "0f3a9c1",
		"dbHost": "db.internal", "dbUser": "shop-staging", // --secret-values wins over secret-values.yaml
		"region": "eu-west-7", "hasDeployments": "true",
	}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("configmap %s = %q, want %q", k, cm.Data[k], v)
		}
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "shop-secrets", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["password"]) != canaries[0] || !strings.Contains(string(sec.Data["tls.key"]), canaries[1]) {
		t.Errorf("secret not decrypted: password %d bytes, tls.key %d bytes", len(sec.Data["password"]), len(sec.Data["tls.key"]))
	}
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "shop-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"project.werf.io/name": "shop", "project.werf.io/env": env, "ci.werf.io/commit": "0f3a9c1",
		"ci.werf.io/author": "ci-bot", "team": "payments", "meta.helm.sh/release-name": release} {
		if dep.Annotations[k] != v {
			t.Errorf("deployment annotation %s = %q, want %q", k, dep.Annotations[k], v)
		}
	}
	if dep.Annotations["werf.io/version"] == "" {
		t.Error("deployment has no werf.io/version annotation")
	}
	if dep.Labels["tier"] != "web" || cm.Labels["tier"] != "web" {
		t.Errorf("--add-label missing: deployment %v, configmap %v", dep.Labels, cm.Labels)
	}

	// What was deployed is what `sealane render` shows against the same cluster, and the
	// release manifest holds no deploy-time annotations.
	rendered := sealane(t, "", append([]string{"render", dir, "--kubeconfig", kubeconfig}, flags...)...) // on the cluster, not offline
	if rendered.code != 0 {
		t.Fatalf("render exit %d:\n%s", rendered.code, rendered.out)
	}
	manifest := helm(t, "get", "manifest", release, "-n", ns)
	if strings.TrimSpace(manifest.out) != strings.TrimSpace(rendered.out) {
		t.Errorf("helm get manifest differs from sealane render:\n--- manifest\n%s\n--- render\n%s", manifest.out, rendered.out)
	}
	if strings.Contains(manifest.out, "werf.io/version") {
		t.Error("release manifest holds the deploy-time annotations")
	}

	// No secret in the deploy output or the event stream.
	ev := sealane(t, data, "events", "--release", release)
	for _, c := range canaries {
		for what, out := range map[string]string{"deploy output": r.out, "events": ev.out} {
			if strings.Contains(out, c) {
				t.Errorf("%s leaks the secret %s", what, c)
			}
		}
	}
}

// TestDeployWrongSecretKey fails before anything is applied, names the file and the key
// mismatch, and leaves no release behind.
func TestDeployWrongSecretKey(t *testing.T) {
	dir, extraSecrets := werfProject(t, werfKey)
	ns := namespace(t)
	r := sealane(t, t.TempDir(), "deploy", dir, "--release", "shop", "--namespace", ns, "--secret-key", otherKey,
		"--secret-values", extraSecrets, "--timeout", "1m")
	if r.code == 0 {
		t.Fatalf("deploy with the wrong key succeeded:\n%s", r.out)
	}
	for _, want := range []string{"secret-values.yaml", "does not match"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.out)
		}
	}
	for _, c := range canaries {
		if strings.Contains(r.out, c) {
			t.Errorf("output leaks %s", c)
		}
	}
	if rels := helmList(t, ns); len(rels) != 0 {
		t.Errorf("helm list = %+v, want no release", rels)
	}
	// Without any key the error says where the key was looked for.
	r = sealane(t, t.TempDir(), "deploy", dir, "--release", "shop", "--namespace", ns, "--timeout", "1m")
	if r.code == 0 || !strings.Contains(r.out, "secret key") || !strings.Contains(r.out, "SEALANE_SECRET_KEY") {
		t.Errorf("deploy without a key: exit %d, output:\n%s", r.code, r.out)
	}
}
