package selfhost

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sealane/sealane/test/harness"
	"github.com/sealane/sealane/test/podrun"
)

// Stage is one of the chart's stages, running.
type Stage struct {
	*podrun.Running
	ProbeURL string
}

// StageRun says how to run the chart's stage Deployments on this machine.
type StageRun struct {
	Objects    *podrun.Objects
	Release    string            // the chart's release name (Deployments <release>-<stage>)
	Namespace  string            // where the chart is installed
	Binaries   map[string]string // harness.BuildServices
	NATSURL    string            // the NATS a pod would reach at the chart's service name
	Kubeconfig string            // the sandbox's: its server and TLS settings
	Clientset  kubernetes.Interface
}

// StartStages runs each stage Deployment of the render as one process with the container's
// command and rendered environment; what a pod gets from its surroundings is given the local
// way: the NATS service's address, a probe port of its own, and — standing in for the pod's
// service account — a kubeconfig with a token of the stage's own ServiceAccount, so the
// stage works with exactly the RBAC the chart grants it. It returns once every /readyz answers.
func StartStages(t *testing.T, r StageRun) map[string]Stage {
	t.Helper()
	stages := map[string]Stage{}
	for _, name := range []string{"renderer", "applier", "tracker", "recorder"} {
		stages[name] = startService(t, r, name)
	}
	ctx := harness.Context(t, time.Minute)
	for _, s := range stages {
		waitHTTP(ctx, t, s.ProbeURL, s.Running)
	}
	return stages
}

// StartRollout runs the chart's rollout coordinator Deployment (<release>-rollout) as the
// stages are run — its own NATS user, its ServiceAccount's token, its mounts as files (the
// signing key's Secret) — and returns once its /readyz answers.
func StartRollout(t *testing.T, r StageRun) Stage {
	t.Helper()
	s := startService(t, r, "rollout")
	waitHTTP(harness.Context(t, time.Minute), t, s.ProbeURL, s.Running)
	return s
}

// startService starts Deployment <release>-<name> of the render as one process (see
// StartStages).
func startService(t *testing.T, r StageRun, name string) Stage {
	t.Helper()
	d, ok := r.Objects.Deployments[r.Release+"-"+name]
	if !ok {
		t.Fatalf("the render has no Deployment %s-%s", r.Release, name)
	}
	spec := d.Spec.Template.Spec
	proc, err := r.Objects.Container(spec, spec.Containers[0], podrun.Pod{Name: d.Name + "-0", Namespace: r.Namespace,
		Root: t.TempDir(), Binaries: r.Binaries})
	if err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	setEnv(&proc, "SEALANE_NATS_URL", r.NATSURL)
	setEnv(&proc, "SEALANE_HTTP_ADDR", probe)
	setEnv(&proc, "KUBECONFIG", serviceAccountKubeconfig(t, r, spec.ServiceAccountName))
	return Stage{Running: podrun.Start(t, proc), ProbeURL: "http://" + probe + "/readyz"}
}

// setEnv sets key in p's environment, replacing a rendered value.
func setEnv(p *podrun.Proc, key, value string) {
	for i, kv := range p.Env {
		if strings.HasPrefix(kv, key+"=") {
			p.Env[i] = key + "=" + value
			return
		}
	}
	p.Env = append(p.Env, key+"="+value)
}

// serviceAccountKubeconfig writes a kubeconfig for the sandbox that authenticates as the
// ServiceAccount sa of r.Namespace, with a token from the TokenRequest API.
func serviceAccountKubeconfig(t *testing.T, r StageRun, sa string) string {
	t.Helper()
	tok, err := r.Clientset.CoreV1().ServiceAccounts(r.Namespace).CreateToken(context.Background(), sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", r.Namespace, sa, err)
	}
	base, err := clientcmd.LoadFromFile(r.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := base.Clusters[base.Contexts[base.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["home"] = cluster
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["home"] = &clientcmdapi.Context{Cluster: "home", AuthInfo: sa, Namespace: r.Namespace}
	cfg.CurrentContext = "home"
	file := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func ptr[T any](v T) *T { return &v }
