package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/test/harness"
)

// tenantClient is a client key of TestTenantBounds: its seed file, for SEALANE_NATS_NKEY, and
// the input bucket it uploads to ($SEALANE_INPUTS_BUCKET).
type tenantClient struct {
	pub, seedFile, bucket string
}

func newTenantClient(t *testing.T, dir, name string) tenantClient {
	t.Helper()
	f, pub := signingKey(t, dir, name) // webhook_rollout_test.go
	return tenantClient{pub: pub, seedFile: f, bucket: bus.TenantInputBucket(name)}
}

// tenantNamespace creates team-a's namespace with ServiceAccount deployer, which may do
// anything with ConfigMaps there and read the namespace — and nothing else (no Services) —
// and a ConfigMap "marker" its templates may look up.
func tenantNamespace(t *testing.T, ctx context.Context) string {
	t.Helper()
	cs := clientset(t)
	ns := namespace(t)
	create := func(what string, err error) {
		if err != nil {
			t.Fatalf("create %s: %v", what, err)
		}
	}
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	create("namespace", err)
	_, err = cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{})
	create("service account", err)
	_, err = cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
	}}, metav1.CreateOptions{})
	create("role", err)
	_, err = cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}, metav1.CreateOptions{})
	create("role binding", err)
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
	create("marker", err)
	return ns
}

// TestTenantBounds runs `sealane serve all` with a client keys file holding an operator
// client (ops) and a client scoped to one namespace running as its ServiceAccount (team-a),
// against the sandbox:
//   - team-a's chart with a ClusterRoleBinding to cluster-admin is refused naming the object
//     and its template, and nothing of it is applied; so is one with an object in kube-system;
//   - the release is not left locked: team-a's next deploy of it succeeds;
//   - its `lookup` of another namespace's Secret finds nothing, of its own ConfigMap finds it;
//   - a Service the plan allows but the ServiceAccount's RBAC forbids fails with the
//     apiserver's Forbidden naming the ServiceAccount;
//   - the operator client deploys a cluster-scoped ClusterRole, and its lookup reads the Secret,
//     as before.
func TestTenantBounds(t *testing.T) {
	sharePayloadKey(t)
	ctx := harness.Context(t, 15*time.Minute)
	dir := t.TempDir()
	ops, team := newTenantClient(t, dir, "ops"), newTenantClient(t, dir, "team-a")
	nsA := tenantNamespace(t, ctx)
	nsB := namespace(t)
	cs := clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsB}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(nsB).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		StringData: map[string]string{"password": "team-b-secret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	keysFile := filepath.Join(dir, "client-keys.yaml")
	if err := os.WriteFile(keysFile, fmt.Appendf(nil, "ops: %s\nteam-a:\n  keys: [%s]\n  namespaces: [%s]\n  serviceAccount: %s/deployer\n",
		ops.pub, team.pub, nsA, nsA), 0o600); err != nil {
		t.Fatal(err)
	}
	port := harness.FreePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `listen: 127.0.0.1:%d
jetstream { store_dir: %q }
authorization { users: [ {nkey: %s}, {nkey: %s}, {user: serve, password: %s}, {user: plain, password: %s} ] }
`, port, t.TempDir(), ops.pub, team.pub, signedTestPassword, signedTestPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, "nats-server", natsBin, "-c", conf)
	waitTCP(t, port)
	startProcess(t, "serve all", sealaneBin, append(os.Environ(), "SEALANE_NATS_USER=serve", "SEALANE_NATS_PASSWORD="+signedTestPassword),
		"serve", "all", "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info", "--client-keys", keysFile)

	suffix := nsA[len(nsA)-8:]
	crbName, crName := "e2e-tenant-root-"+suffix, "e2e-tenant-reader-"+suffix
	t.Cleanup(func() {
		c := context.Background()
		_ = cs.RbacV1().ClusterRoleBindings().Delete(c, crbName, metav1.DeleteOptions{})
		_ = cs.RbacV1().ClusterRoles().Delete(c, crName, metav1.DeleteOptions{})
		_ = cs.CoreV1().ConfigMaps("kube-system").Delete(c, "e2e-tenant-"+suffix, metav1.DeleteOptions{})
	})
	deploy := func(who tenantClient, chart, release, ns string, set ...string) result {
		args := []string{"deploy", chart, "--nats", url, "--release", release, "--namespace", ns, "--timeout", "2m", "--kubeconfig", kubeconfig}
		for _, s := range set {
			args = append(args, "--set", s)
		}
		return runWithEnv(t, 5*time.Minute, []string{"SEALANE_NATS_NKEY=" + who.seedFile, bus.EnvInputBucket + "=" + who.bucket}, sealaneBin, args...)
	}
	refused := func(what string, r result, want ...string) {
		t.Helper()
		if r.code == 0 {
			t.Errorf("%s: deploy succeeded, want it refused:\n%s", what, r.out)
			return
		}
		for _, w := range want {
			if !strings.Contains(r.out, w) {
				t.Errorf("%s: output does not say %q:\n%s", what, w, r.out)
			}
		}
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  a: b\n"

	// A ClusterRoleBinding to cluster-admin.
	crbChart := writeChart(t, "crb", map[string]string{"cm.yaml": cm, "crb.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ .Values.name }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: default, namespace: {{ .Release.Namespace }}}]
`})
	refused("ClusterRoleBinding", deploy(team, crbChart, "app", nsA, "name="+crbName),
		"ClusterRoleBinding.rbac.authorization.k8s.io/"+crbName+" (cluster-scoped, from crb/templates/crb.yaml",
		"client team-a", "--client-keys")
	if _, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, crbName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRoleBinding %s: %v, want it never created", crbName, err)
	}
	if _, err := cs.CoreV1().ConfigMaps(nsA).Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap app of the refused chart: %v, want nothing applied", err)
	}

	// An object in kube-system.
	ksChart := writeChart(t, "ks", map[string]string{"cm.yaml": cm, "ks.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e2e-tenant-{{ .Values.suffix }}\n  namespace: kube-system\n"})
	refused("kube-system", deploy(team, ksChart, "app", nsA, "suffix="+suffix),
		"ConfigMap/e2e-tenant-"+suffix+" in namespace kube-system (from ks/templates/ks.yaml")
	if _, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, "e2e-tenant-"+suffix, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-system ConfigMap: %v, want it never created", err)
	}

	// lookup as the ServiceAccount; the same release deploys: the refusals left it unlocked.
	lookupChart := writeChart(t, "lookup", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: app
data:
  other: {{ lookup "v1" "Secret" .Values.other "db" | len | quote }}
  own: {{ lookup "v1" "ConfigMap" .Release.Namespace "marker" | len | quote }}
`})
	if r := deploy(team, lookupChart, "app", nsA, "other="+nsB); r.code != 0 {
		t.Fatalf("team-a's lookup deploy exit %d:\n%s", r.code, r.out)
	}
	got, err := cs.CoreV1().ConfigMaps(nsA).Get(ctx, "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["other"] != "0" || got.Data["own"] == "0" {
		t.Errorf("team-a's lookups: %v, want nothing of %s's Secret (0) and its own ConfigMap (not 0)", got.Data, nsB)
	}
	if strings.Contains(fmt.Sprint(got.Data), "team-b-secret") {
		t.Errorf("the Secret leaked: %v", got.Data)
	}

	// Allowed by the scope, forbidden by the ServiceAccount's RBAC.
	svcChart := writeChart(t, "svc", map[string]string{"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n"})
	refused("Service", deploy(team, svcChart, "svc", nsA),
		"forbidden", `User "system:serviceaccount:`+nsA+`:deployer"`)
	if _, err := cs.CoreV1().Services(nsA).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service web: %v, want it not created", err)
	}

	// The operator client: cluster-scoped objects and lookups as before.
	crChart := writeChart(t, "cr", map[string]string{"cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: ops
data:
  other: {{ lookup "v1" "Secret" .Values.other "db" | len | quote }}
`, "cr.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {{ .Values.name }}\nrules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]\n"})
	if r := deploy(ops, crChart, "ops", nsB, "name="+crName, "other="+nsB); r.code != 0 {
		t.Fatalf("operator deploy exit %d:\n%s", r.code, r.out)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, crName, metav1.GetOptions{}); err != nil {
		t.Errorf("the operator's ClusterRole: %v", err)
	}
	if got, err := cs.CoreV1().ConfigMaps(nsB).Get(ctx, "ops", metav1.GetOptions{}); err != nil || got.Data["other"] == "0" {
		t.Errorf("the operator's lookup: %v, %v; want the Secret found", got.Data, err)
	}
}
