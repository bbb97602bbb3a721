package console

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/console"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/test/harness"
)

// TestConsoleReleaseHistoryFromRecords: helm installs a release (revision 1, in no event) and
// the pipeline upgrades it (revision 2). The console of `serve all`, which reads the registered
// clusters, serves the release's whole history from its records: both revisions with status,
// chart, time and description, revision 2 joined with its deploy and requester — and neither
// revision's values. The events alone know revision 2 only.
func TestConsoleReleaseHistoryFromRecords(t *testing.T) {
	p := startPipeline(t)
	ns := kubetest.UncreatedNamespace(t, harness.Clientset(t, env.Kubeconfig), "console2-hist-")
	canary := "CONSOLE2CANARY" + randomHex(t, 8)
	// revision 2 changes the value (an unchanged deploy would be up to date: no revision)
	canary2 := canary + "TWO"
	secrets := []string{canary, base64.StdEncoding.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString([]byte(canary2))}
	helm := exec.Command(env.Helm, "install", "console2-hist", liveChart, "-n", ns, "--create-namespace",
		"--kubeconfig", env.Kubeconfig, "--kube-context", "sandbox-1", "--set", "password="+canary)
	helm.Dir, helm.Env = env.RepoRoot, os.Environ()
	if out, err := helm.CombinedOutput(); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	deploy := p.sealane(t, "deploy", "deploy", liveChart, "--cluster", "sandbox-1", "--release", "console2-hist", "--namespace", ns,
		"--set", "password="+canary2, "--timeout", "3m")
	if code := deploy.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("deploy exit %d:\n%s", code, deploy.output())
	}
	url := p.console + "/api/releases/sandbox-1/" + ns + "/console2-hist"
	var h console.ReleaseHistory
	var herr error
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last history answer: %+v (%v)", h, herr)
		}
	})
	eventually(t, time.Minute, "the release's history with revision 2's deploy", func(ctx context.Context) bool {
		start := time.Now()
		herr = getJSON(ctx, url, &h)
		if d := time.Since(start); d > time.Second {
			t.Logf("GET %s took %s", url, d)
		}
		return herr == nil && len(h.History) == 2 && h.History[1].Deploy != ""
	})
	if h.Source != console.SourceCluster {
		t.Fatalf("history source %q (%s), want the cluster's records", h.Source, h.Note)
	}
	r1, r2 := h.History[0], h.History[1]
	if r1.Revision != 1 || r1.Status != "superseded" || !strings.HasPrefix(r1.Chart, "console-live-") || r1.Time.IsZero() || r1.Reason != "Install complete" || r1.Deploy != "" {
		t.Errorf("revision 1 (helm's) = %+v, want superseded, its chart, time and description, no deploy", r1)
	}
	if r2.Revision != 2 || r2.Status != "deployed" || !strings.HasPrefix(r2.Chart, "console-live-") || r2.RequestedBy == "" || r2.Time.IsZero() {
		t.Errorf("revision 2 (the pipeline's) = %+v, want deployed with its chart, requester and deploy", r2)
	}
	var rels []console.Release
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := getJSON(ctx, p.console+"/api/releases", &rels); err != nil || len(rels) != 1 || len(rels[0].History) != 1 || rels[0].History[0].Revision != 2 {
		t.Errorf("the events' histories = %+v (%v), want revision 2 only", rels, err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	noneOf(t, "the release history answer", string(body), secrets...)
}
