package pipeline

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/gitsource"
	"github.com/sealane/sealane/pkg/gitsource/gittest"
	"github.com/sealane/sealane/pkg/pipeline/pipelinetest"
	"github.com/sealane/sealane/pkg/stage"
)

// metadataSecret is what the loopback "metadata" host answers.
const metadataSecret = "instance-credential-7f3a"

// TestAdmissionRefusesFetchesOutsideTheSources: --allow-chart-source holds for every URL the
// renderer fetches for a request, not only the one the request names. A chart whose entry in
// an allowed repository's index.yaml points at a loopback "metadata" host, and a git
// repository on an allowed host that redirects to a git server on another, fail the deploy
// (nothing to retry) with a reason naming the refused host and the rule; the other host gets
// no request and its answer is in no reason.
func TestAdmissionRefusesFetchesOutsideTheSources(t *testing.T) {
	t.Run("chart URL in index.yaml", func(t *testing.T) {
		var hits atomic.Int64
		meta := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			_, _ = w.Write([]byte(metadataSecret))
		}))
		t.Cleanup(meta.Close)
		// An allowed Helm repository whose index.yaml lists web's archive on the metadata host.
		dir := t.TempDir()
		if _, err := chartutil.Save(&helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "web", Version: "1.0.0"}}, dir); err != nil {
			t.Fatal(err)
		}
		idx, err := repo.IndexDirectory(dir, meta.URL+"/latest/meta-data")
		if err != nil {
			t.Fatal(err)
		}
		if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
			t.Fatal(err)
		}
		repoSrv := httptest.NewServer(http.FileServer(http.Dir(dir)))
		t.Cleanup(repoSrv.Close)
		h, _, _ := admissionEnv(t, Admission{Sources: policy(t, repoSrv.URL+"/**")})
		refusedFetch(t, h, events.ChartSource{Name: "web", Repo: repoSrv.URL}, strings.TrimPrefix(meta.URL, "http://"))
		if n := hits.Load(); n != 0 {
			t.Errorf("the metadata host got %d requests, want none", n)
		}
	})
	t.Run("git redirect", func(t *testing.T) {
		gitSrv := gittest.NewServer(t)
		gitRepo := gitSrv.Init(t, "shop")
		commit := gitRepo.Commit(t, map[string]string{"Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n"}, "first")
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, gitSrv.URL()+r.URL.RequestURI(), http.StatusFound)
		}))
		t.Cleanup(front.Close)
		h, _, _ := admissionEnv(t, Admission{Sources: policy(t, front.URL+"/**"), Git: gitsource.Options{CacheDir: t.TempDir()}})
		url := front.URL + strings.TrimPrefix(gitRepo.URL(), gitSrv.URL())
		refusedFetch(t, h, events.ChartSource{Git: &events.GitChart{URL: url, Commit: commit}}, strings.TrimPrefix(gitSrv.URL(), "http://"))
		if n := gitSrv.Requests(); n != 0 {
			t.Errorf("the git server behind the redirect got %d requests, want none", n)
		}
	})
}

// refusedFetch handles a request for ch and wants it failed (nothing to retry) with a reason
// naming the refused host and the rule, and quoting no answer of the metadata host.
func refusedFetch(t *testing.T, h stage.Handler, ch events.ChartSource, host string) {
	t.Helper()
	out, err := h.Handle(pipelinetest.Context(t), fromBus(t, events.RequestedData{Target: pipelinetest.Target, Chart: ch}, nil, time.Now()))
	if err != nil {
		t.Fatalf("Handle = %v, want deploy.failed (nothing to retry)", err)
	}
	got := pipelinetest.FailedReason(out)
	if !strings.Contains(got, "host "+host) || !strings.Contains(got, "--allow-chart-source") {
		t.Errorf("failed reason %q, want the refused host %s and the rule (emitted %v)", got, host, pipelinetest.Emitted(out))
	}
	if strings.Contains(got, metadataSecret) {
		t.Errorf("failed reason %q quotes the refused host's answer", got)
	}
}
