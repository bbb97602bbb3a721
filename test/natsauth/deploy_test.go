package natsauth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/console"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/test/harness"
)

// A complete deploy over TLS with every stage on its own user: the four stages run as
// `sealane serve <stage>` processes with their nkeys (the renderer, applier, tracker and
// recorder users of deployments/nats), the CLI deploys examples/demo onto the sandbox as the
// client user, and the audit user reads the events back. The server logs no permission
// violation from a stage; clients' only ones are the ordered consumers' clean-up deletes,
// which they are not allowed (the server removes those consumers once idle).
func TestDeployWithEveryStageOnItsOwnUserOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the sandbox cluster (the other tests of this package do not)")
	}
	env, cleanup, err := harness.Setup("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	e := startNATS(t)
	key, err := payload.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	procEnv := append(os.Environ(), payload.EnvKey+"="+key)
	// natsArgs connect as role; kubeArgs too, for a command that takes --kubeconfig (not events).
	natsArgs := func(role string) []string {
		args := []string{"--nats", e.url, "--nats-nkey", e.seeds[role], "--nats-tls-ca", e.caPEM}
		if stageRole(role) {
			args = append(args, "--nats-inbox-prefix", "_INBOX_"+role)
		}
		return args
	}
	kubeArgs := func(role string) []string { return append(natsArgs(role), "--kubeconfig", env.Kubeconfig) }
	for _, s := range []string{"renderer", "applier", "tracker", "recorder"} {
		startProc(t, "serve "+s, env.RepoRoot, procEnv, env.Sealane, append([]string{"serve", s, "--log-level", "info"}, kubeArgs(s)...)...)
	}
	// The web console as the console user, with the kubeconfig's clusters: it follows the deploy
	// and reads the release's records.
	consoleAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	startProc(t, "serve console", env.RepoRoot, procEnv, env.Sealane, append([]string{"serve", "console", "--console-addr", consoleAddr,
		"--log-level", "info", "--nats-inbox-prefix", "_INBOX_console"}, kubeArgs("console")...)...)
	ns := kubetest.UncreatedNamespace(t, harness.Clientset(t, env.Kubeconfig), "natsauth-")
	out, code := runProc(t, 3*time.Minute, env.RepoRoot, procEnv, env.Sealane,
		append([]string{"deploy", "examples/demo", "--release", "natsauth", "--namespace", ns, "--timeout", "2m"}, kubeArgs("client")...)...)
	if code != 0 {
		t.Fatalf("deploy as the client user: exit %d\n%s", code, out)
	}
	helmOut, code := runProc(t, time.Minute, env.RepoRoot, append(os.Environ(), "KUBECONFIG="+env.Kubeconfig), env.Helm, "list", "-n", ns, "-o", "json")
	var rels []struct{ Name, Status string }
	if code != 0 || json.Unmarshal([]byte(helmOut), &rels) != nil || len(rels) != 1 || rels[0].Status != "deployed" {
		t.Fatalf("helm list: exit %d, %+v\n%s", code, rels, helmOut)
	}
	checkConsole(t, "http://"+consoleAddr, ns)
	evOut, code := runProc(t, time.Minute, env.RepoRoot, os.Environ(), env.Sealane,
		append([]string{"events", "--release", "natsauth"}, natsArgs("audit")...)...)
	if code != 0 {
		t.Fatalf("events as the audit user: exit %d\n%s", code, evOut)
	}
	for _, tok := range []string{"requested", "rendered", "started", "phase_applied", "phase_tracked", "succeeded", "release_recorded"} {
		if !strings.Contains(evOut, tok) {
			t.Errorf("the audit user's events lack %s", tok)
		}
	}
	// Two deploys of the release at once: one waits in the release's queue (the renderer
	// publishes queued) and is handed the lease when the other ends (the recorder re-publishes
	// its request).
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			cmd := exec.Command(env.Sealane, append([]string{"deploy", "examples/demo", "--release", "natsauth", "--namespace", ns,
				"--timeout", "2m", "--set", "replicas=" + []string{"1", "3"}[i]}, kubeArgs("client")...)...)
			cmd.Dir, cmd.Env = env.RepoRoot, procEnv
			b, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(b), err
		})
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("concurrent deploy %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	if !strings.Contains(outs[0]+outs[1], "queued") {
		t.Errorf("neither concurrent deploy was queued:\n%s\n%s", outs[0], outs[1])
	}
	// A request the renderer cannot decode is dead-lettered by the renderer user.
	poison := "sealane.deploy.requested.sandbox." + ns + ".poison"
	if err := e.connect(t, "client").Publish(poison, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	ctx := harness.Context(t, 30*time.Second)
	js, err := jetstream.New(e.connect(t, "provisioner"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		s, err := js.Stream(ctx, "SEALANE_DEADLETTER")
		if err != nil {
			t.Fatal(err)
		}
		if s.CachedInfo().State.Msgs == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the poison request was never dead-lettered")
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The example audit consumer, as the audit user, prints who deployed what.
	auditBin := filepath.Join(t.TempDir(), "audit-consumer")
	if out, code := runProc(t, 2*time.Minute, filepath.Join(env.RepoRoot, "examples", "audit-consumer"), os.Environ(), "go", "build", "-o", auditBin, "."); code != 0 {
		t.Fatalf("build the audit consumer: %s", out)
	}
	auditOut, code := runProc(t, time.Minute, env.RepoRoot, os.Environ(), auditBin, "--nats", e.url, "--nats-nkey", e.seeds["audit"], "--nats-tls-ca", e.caPEM, "--follow=false")
	if code != 0 || !strings.Contains(auditOut, "/"+ns+"/natsauth revision 1: succeeded") {
		t.Errorf("audit consumer as the audit user: exit %d, want the deploy's line\n%s", code, auditOut)
	}
	for _, v := range e.takeViolations() {
		if strings.Contains(v, "$JS.API.CONSUMER.DELETE.") && !strings.Contains(v, "sealane-renderer") &&
			!strings.Contains(v, "sealane-applier") && !strings.Contains(v, "sealane-tracker") && !strings.Contains(v, "sealane-recorder") {
			t.Logf("refused, as it should: %s", v) // a client's ordered consumer cleaning up
			continue
		}
		t.Errorf("permission violation during the deploy: %s", v)
	}
}

// proc is a background process whose output is kept for the test log.
type proc struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// startProc runs bin until the test ends (SIGTERM, then a kill after 10 s), printing its output
// if the test failed.
func startProc(t *testing.T, name, dir string, env []string, bin string, args ...string) {
	t.Helper()
	p := &proc{}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, p, p
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("--- %s output:\n%s", name, p.out.String())
			p.mu.Unlock()
		}
	})
}

// runProc runs bin to completion within timeout and returns its combined output and exit code.
func runProc(t *testing.T, timeout time.Duration, dir string, env []string, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var buf bytes.Buffer
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &buf, &buf
	err := cmd.Run()
	t.Logf("$ %s %s\n%s", filepath.Base(bin), strings.Join(args, " "), buf.String())
	if ee, ok := err.(*exec.ExitError); ok && ctx.Err() == nil {
		return buf.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(bin), err)
	}
	return buf.String(), 0
}

// checkConsole waits until the console at base shows the natsauth deploy of namespace ns
// succeeded, and its release's history read from the records in the cluster.
func checkConsole(t *testing.T, base, ns string) {
	t.Helper()
	ctx := harness.Context(t, time.Minute)
	for {
		var ds []console.Deploy
		var h console.ReleaseHistory
		getJSON(ctx, t, base+"/api/deploys", &ds)
		if len(ds) > 0 && ds[0].Release == "natsauth" && ds[0].Status == console.StatusSucceeded {
			getJSON(ctx, t, base+"/api/releases/"+ds[0].Cluster+"/"+ns+"/natsauth", &h)
			if h.Source != console.SourceCluster || len(h.History) != 1 || h.History[0].Status != "deployed" || h.History[0].Deploy != ds[0].ID {
				t.Errorf("the console's history of the release = %+v, want revision 1 from the cluster's records", h)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the console as the console user shows %+v, want the natsauth deploy succeeded", ds)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
