package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/test/harness"
)

// TestConsoleEmbedded: `sealane console` over a data directory shows a deploy that another
// process, `sealane deploy` in embedded mode, runs on the same directory meanwhile.
func TestConsoleEmbedded(t *testing.T) {
	dataDir := t.TempDir()
	port := harness.FreePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	ns := kubetest.UncreatedNamespace(t, harness.Clientset(t, env.Kubeconfig), "console-emb-")
	con := start(t, "sealane console", env.Sealane, "console", "--data-dir", dataDir, "--addr", fmt.Sprintf("127.0.0.1:%d", port),
		"--kubeconfig", env.Kubeconfig)
	eventually(t, time.Minute, "the console answers", func(ctx context.Context) bool {
		var ds []map[string]any
		return getJSON(ctx, url+"/api/deploys", &ds) == nil
	})
	deploy := start(t, "sealane deploy", env.Sealane, "deploy", liveChart, "--data-dir", dataDir, "--kubeconfig", env.Kubeconfig,
		"--release", "console-emb", "--namespace", ns, "--timeout", "2m")
	if code := deploy.wait(t, 3*time.Minute); code != 0 {
		t.Fatalf("embedded deploy exit %d:\n%s", code, deploy.output())
	}
	eventually(t, time.Minute, "the embedded deploy in the console, succeeded", func(ctx context.Context) bool {
		var ds []struct{ Release, Status string }
		if getJSON(ctx, url+"/api/deploys", &ds) != nil {
			return false
		}
		for _, d := range ds {
			if d.Release == "console-emb" && d.Status == "succeeded" {
				return true
			}
		}
		return false
	})
	if out := con.output(); !strings.Contains(out, "sealane console on "+url+"/") {
		t.Errorf("sealane console printed no URL:\n%s", out)
	}
}

func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
