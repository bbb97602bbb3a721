package e2e

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// hookRBACChart is the corpus chart in the shape of admission-webhook certificate charts:
// ServiceAccount, Role and RoleBinding hooks (weight -5) on pre-install, pre-upgrade,
// post-install and post-upgrade, and a Job per side (weight 1) that runs under that
// ServiceAccount; every hook is before-hook-creation,hook-succeeded.
const hookRBACChart = "pkg/chart/testdata/corpus/hook-rbac"

// hookObjects lists the hook objects left in ns: "Kind/name", sorted.
func hookObjects(t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	sas, err := cs.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sas.Items {
		if o.Name != "default" {
			out = append(out, "ServiceAccount/"+o.Name)
		}
	}
	roles, err := cs.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range roles.Items {
		out = append(out, "Role/"+o.Name)
	}
	bindings, err := cs.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range bindings.Items {
		out = append(out, "RoleBinding/"+o.Name)
	}
	jobs, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range jobs.Items {
		if o.DeletionTimestamp == nil {
			out = append(out, "Job/"+o.Name)
		}
	}
	sort.Strings(out)
	return out
}

// TestHookRBACAsHelm installs, upgrades and fails an upgrade of the RBAC-hooks chart with
// sealane and, in another namespace, with helm: both succeed where helm succeeds (the Jobs
// find their ServiceAccount: the RBAC hooks are deleted only once every hook of the event
// succeeded), both fail the upgrade whose create Job fails, and after each step the same hook
// objects are left — none after a success; after the failure the failed Job (no hook-failed
// policy) while the RBAC hooks that succeeded before it are deleted (hook-succeeded).
func TestHookRBACAsHelm(t *testing.T) {
	cs := clientset(t)
	nsSealane, nsHelm := namespace(t), namespace(t)
	data := t.TempDir()
	deploy := func(extra ...string) result {
		return sealane(t, data, append([]string{"deploy", hookRBACChart, "--release", "certgen", "--namespace", nsSealane, "--timeout", "2m"}, extra...)...)
	}
	helmDeploy := func(extra ...string) result {
		return helm(t, append([]string{"upgrade", "--install", "certgen", hookRBACChart, "-n", nsHelm, "--create-namespace", "--wait", "--timeout", "2m"}, extra...)...)
	}
	steps := []struct {
		name    string
		args    []string
		success bool
	}{
		{"install", nil, true},
		{"upgrade", []string{"--set", "image=registry.example.com/certgen:1.1"}, true},
		{"failing upgrade", []string{"--set", "fail=true"}, false},
	}
	for _, st := range steps {
		s, h := deploy(st.args...), helmDeploy(st.args...)
		if (s.code == 0) != st.success || (h.code == 0) != st.success {
			t.Fatalf("%s: sealane exit %d, helm exit %d; want both to succeed %v\n--- sealane:\n%s\n--- helm:\n%s", st.name, s.code, h.code, st.success, s.out, h.out)
		}
		if strings.Contains(s.out, "\tWARN\t") || strings.Contains(s.out, "\tINFO\t") {
			t.Errorf("%s: log lines in sealane's progress output (without --log-level):\n%s", st.name, s.out)
		}
		left, helmLeft := hookObjects(t, cs, nsSealane), hookObjects(t, cs, nsHelm)
		if strings.Join(left, " ") != strings.Join(helmLeft, " ") {
			t.Errorf("%s: hook objects left by sealane %v, by helm %v", st.name, left, helmLeft)
		}
		want := []string{}
		if !st.success {
			want = []string{"Job/certgen-create"}
		}
		if strings.Join(left, " ") != strings.Join(want, " ") {
			t.Errorf("%s: hook objects left %v, want %v", st.name, left, want)
		}
	}
	hist := helmHistory(t, nsSealane, "certgen")
	if len(hist) != 3 || hist[0].Status != "superseded" || hist[1].Status != "deployed" || hist[2].Status != "failed" {
		t.Errorf("sealane's release: helm history %+v; want superseded, deployed, failed", hist)
	}
}
