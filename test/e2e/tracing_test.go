package e2e

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/tracing"
	"github.com/sealane/sealane/test/harness"
)

// fileSpan is a span as the SEALANE_TRACES_FILE exporter (stdouttrace) writes it.
type fileSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []fileAttr
	Resource    []fileAttr
	service     string
}

type fileAttr struct {
	Key   string
	Value struct{ Value any }
}

func (s fileSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return fmt.Sprint(a.Value.Value)
		}
	}
	return ""
}

const noSpan = "0000000000000000"

// readSpans reads the spans of a traces file, each with its service.name.
func readSpans(t *testing.T, file string) []fileSpan {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("traces file: %v", err)
	}
	var out []fileSpan
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		var s fileSpan
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, r := range s.Resource {
			if r.Key == "service.name" {
				s.service = fmt.Sprint(r.Value.Value)
			}
		}
		out = append(out, s)
	}
	return out
}

// stopProcess ends p as its supervisor would (SIGTERM) and waits, so that it flushes its spans.
func stopProcess(t *testing.T, p *process) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop %s: %v", p.name, err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s exited with %v after SIGTERM:\n%s", p.name, err, p.output())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit within 20s of SIGTERM", p.name)
	}
}

// TestTraceAcrossSeparateStageProcesses deploys a chart with a Secret through the four stages
// as separate `sealane serve` processes and the CLI, each writing its spans to its own file
// (SEALANE_TRACES_FILE), and checks that the deploy is one connected trace: one root (the
// CLI's), every other span's parent in the set, spans of the CLI and all four stages, a span for
// each phase (render, plan, apply, track, release write) with the deploy's attributes, and the
// Secret's value in no file.
func TestTraceAcrossSeparateStageProcesses(t *testing.T) {
	sharePayloadKey(t)
	port := harness.FreePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	waitTCP(t, port)
	dir := t.TempDir()
	env := func(file string) []string {
		var out []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, tracing.EnvTracesFile+"=") {
				out = append(out, kv) // no collector of the developer's: the files only
			}
		}
		return append(out, tracing.EnvTracesFile+"="+filepath.Join(dir, file))
	}
	stages := []string{"renderer", "applier", "tracker", "recorder"}
	var procs []*process
	for _, s := range stages {
		procs = append(procs, startProcess(t, "serve "+s, sealaneBin, env(s+".jsonl"),
			"serve", s, "--nats", url, "--kubeconfig", kubeconfig, "--log-level", "info"))
	}
	ns := kubetest.UncreatedNamespace(t, clientset(t), "trace-")
	secret := make([]byte, 12)
	_, _ = rand.Read(secret)
	password := "trace-pw-" + hex.EncodeToString(secret)
	r := runWithEnv(t, 4*time.Minute, []string{tracing.EnvTracesFile + "=" + filepath.Join(dir, "cli.jsonl")}, sealaneBin,
		"deploy", "test/e2e/testdata/traced", "--nats", url, "--release", "traced", "--namespace", ns,
		"--set", "password="+password, "--timeout", "2m", "--kubeconfig", kubeconfig)
	if r.code != 0 {
		t.Fatalf("deploy exit %d:\n%s", r.code, r.out)
	}
	for _, p := range procs {
		stopProcess(t, p)
	}

	var spans []fileSpan
	for _, f := range append([]string{"cli"}, stages...) {
		file := filepath.Join(dir, f+".jsonl")
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("traces of %s: %v", f, err)
		}
		if bytes.Contains(raw, []byte(password)) {
			t.Errorf("the Secret's value is in the spans of %s", f)
		}
		spans = append(spans, readSpans(t, file)...)
	}
	var deployID, traceID string
	for _, s := range spans {
		if s.service == "sealane-cli" && s.Name == "sealane deploy" {
			deployID, traceID = s.attr("sealane.deploy.id"), s.SpanContext.TraceID
		}
	}
	if deployID == "" {
		t.Fatalf("no `sealane deploy` span of the CLI with a deploy id among %d spans", len(spans))
	}
	traces := map[string]bool{}
	var trace []fileSpan
	ids := map[string]bool{}
	for _, s := range spans {
		if s.attr("sealane.deploy.id") == deployID {
			traces[s.SpanContext.TraceID] = true
		}
		if s.SpanContext.TraceID == traceID {
			trace = append(trace, s)
			ids[s.SpanContext.SpanID] = true
		}
	}
	if len(traces) != 1 {
		t.Errorf("deploy %s has spans in %d traces, want 1: %v", deployID, len(traces), traces)
	}
	if len(trace) != len(spans) {
		t.Errorf("%d of the %d spans written are in the deploy's trace; want all (one deploy ran)", len(trace), len(spans))
	}
	roots := 0
	services := map[string]bool{}
	names := map[string]bool{}
	for _, s := range trace {
		services[s.service] = true
		names[s.Name] = true
		switch {
		case s.Parent.SpanID == "" || s.Parent.SpanID == noSpan:
			roots++
		case !ids[s.Parent.SpanID]:
			t.Errorf("span %q (%s) has parent %s, which is in no file: the trace is not connected", s.Name, s.service, s.Parent.SpanID)
		}
		if st := s.attr("sealane.stage"); st != "" {
			for key, want := range map[string]string{"sealane.deploy.id": deployID, "sealane.release": "traced", "k8s.namespace.name": ns} {
				if got := s.attr(key); got != want {
					t.Errorf("%s span %q: %s = %q, want %q", st, s.Name, key, got, want)
				}
			}
			if s.attr("k8s.cluster.name") == "" || s.attr("cloudevents.event_id") == "" || s.attr("cloudevents.event_type") == "" {
				t.Errorf("%s span %q lacks the cluster or the event: %+v", st, s.Name, s.Attributes)
			}
		}
	}
	if roots != 1 {
		t.Errorf("the trace has %d roots, want 1 (the CLI's span)", roots)
	}
	for _, svc := range []string{"sealane-cli", "sealane-renderer", "sealane-applier", "sealane-tracker", "sealane-recorder"} {
		if !services[svc] {
			t.Errorf("no span of %s in the trace (services: %v)", svc, services)
		}
	}
	for _, name := range []string{"render", "plan", "apply.phase", "apply.batch", "apply.hooks", "track.wait", "release.write",
		"renderer requested", "applier started", "tracker phase_applied", "recorder succeeded"} {
		if !names[name] {
			t.Errorf("no %q span in the trace (spans: %v)", name, slices.Sorted(mapKeys(names)))
		}
	}
	t.Logf("deploy %s: %d spans in trace %s", deployID, len(trace), traceID)
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
