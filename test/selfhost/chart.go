package selfhost

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sealane/sealane/test/podrun"
)

// Render renders deployments/chart of repoRoot with helm (release "sealane" in namespace) and
// more helm template arguments (values, --dry-run=server to see an installation's Secrets),
// and parses it.
func Render(t *testing.T, helm, repoRoot, namespace string, args ...string) *podrun.Objects {
	t.Helper()
	return RenderWith(t, "", helm, repoRoot, namespace, args...)
}

// RenderWith is Render with more manifests parsed after the chart's: what a pod finds in the
// namespace besides the chart's objects, such as the existing Secrets the values name
// (webhook.secrets), so that their volumes become files too.
func RenderWith(t *testing.T, extra, helm, repoRoot, namespace string, args ...string) *podrun.Objects {
	t.Helper()
	args = append([]string{"template", "sealane", filepath.Join(repoRoot, "deployments", "chart"), "--namespace", namespace}, args...)
	out, err := exec.Command(helm, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("helm %v: %v\n%s", args, err, msg)
	}
	objs, err := podrun.Parse(string(out) + "\n---\n" + extra)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
