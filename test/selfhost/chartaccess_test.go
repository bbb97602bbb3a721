package selfhost

import (
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// helmTemplate runs helm template on deployments/chart with args and returns its output and
// error.
func helmTemplate(args ...string) (string, error) {
	args = append([]string{"template", "sealane", filepath.Join(env.RepoRoot, "deployments", "chart"), "--namespace", consoleNamespace}, args...)
	out, err := exec.Command(env.Helm, args...).CombinedOutput()
	return string(out), err
}

// TestChartAuthProxyNeedsAllowFrom: console.authProxyHeader trusts a header anyone who
// reaches the console can set, so the chart refuses it unless console.allowFrom names the
// proxy and the NetworkPolicies are on; the message names the setting and what to do.
func TestChartAuthProxyNeedsAllowFrom(t *testing.T) {
	proxy := []string{"--set", "console.enabled=true", "--set", "console.authProxyHeader=X-Forwarded-User"}
	for name, extra := range map[string][]string{
		"no allowFrom":                      nil,
		"allowFrom without NetworkPolicies": {"--set", "console.allowFrom[0].podSelector.matchLabels.app=oauth2-proxy", "--set", "networkPolicy.enabled=false"},
	} {
		out, err := helmTemplate(append(proxy, extra...)...)
		if err == nil || !strings.Contains(out, "console.allowFrom") || !strings.Contains(out, "console.token.secretName") {
			t.Errorf("%s: err = %v, want the render to fail naming console.allowFrom and the token alternative:\n%s", name, err, out)
		}
	}
	if out, err := helmTemplate(append(proxy, "--set", "console.allowFrom[0].podSelector.matchLabels.app=oauth2-proxy")...); err != nil {
		t.Errorf("authProxyHeader with allowFrom: %v\n%s", err, out)
	}
	if out, err := helmTemplate("--set", "console.enabled=true", "--set", "console.token.secretName=console-token"); err != nil {
		t.Errorf("a token without allowFrom: %v\n%s", err, out)
	}
}

// TestChartNATSMonitorPort: the NATS monitor port (8222) is open to no pod by default — no
// NetworkPolicy rule lets pods in and the headless Service does not list it (the kubelet's
// probes come from the node) — and only to the peers nats.monitoring.allowFrom names.
func TestChartNATSMonitorPort(t *testing.T) {
	out, err := helmTemplate("--show-only", "templates/networkpolicy.yaml", "--show-only", "templates/nats.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	policy, headless := natsAccess(t, out)
	for _, r := range monitorRules(policy) {
		t.Errorf("default: the NATS NetworkPolicy lets %+v reach the monitor port, want no pod", r.From)
	}
	if servesMonitor(headless) {
		t.Error("default: the headless Service lists the monitor port, want it only with nats.monitoring.allowFrom")
	}

	out, err = helmTemplate("--show-only", "templates/networkpolicy.yaml", "--show-only", "templates/nats.yaml",
		"--set", "nats.monitoring.allowFrom[0].podSelector.matchLabels.app=nats-exporter")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	policy, headless = natsAccess(t, out)
	rules := monitorRules(policy)
	if len(rules) != 1 || len(rules[0].From) != 1 || rules[0].From[0].PodSelector == nil ||
		rules[0].From[0].PodSelector.MatchLabels["app"] != "nats-exporter" {
		t.Errorf("with allowFrom: monitor rules %+v, want one from app=nats-exporter only", rules)
	}
	if !servesMonitor(headless) {
		t.Error("with allowFrom: the headless Service does not list the monitor port")
	}
}

// natsAccess finds the NATS NetworkPolicy and headless Service in a render.
func natsAccess(t *testing.T, render string) (*networkingv1.NetworkPolicy, *corev1.Service) {
	t.Helper()
	var policy *networkingv1.NetworkPolicy
	var headless *corev1.Service
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(render), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		switch {
		case u.GetKind() == "NetworkPolicy" && u.GetName() == "sealane-nats":
			policy = &networkingv1.NetworkPolicy{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, policy); err != nil {
				t.Fatal(err)
			}
		case u.GetKind() == "Service" && u.GetName() == "sealane-nats-headless":
			headless = &corev1.Service{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, headless); err != nil {
				t.Fatal(err)
			}
		}
	}
	if policy == nil || headless == nil {
		t.Fatalf("the render has no NetworkPolicy sealane-nats or Service sealane-nats-headless:\n%s", render)
	}
	return policy, headless
}

// monitorRules are the ingress rules of p that open port 8222.
func monitorRules(p *networkingv1.NetworkPolicy) []networkingv1.NetworkPolicyIngressRule {
	var out []networkingv1.NetworkPolicyIngressRule
	for _, r := range p.Spec.Ingress {
		if len(r.Ports) == 0 {
			out = append(out, r) // every port
			continue
		}
		for _, port := range r.Ports {
			if port.Port != nil && port.Port.IntValue() == 8222 {
				out = append(out, r)
			}
		}
	}
	return out
}

func servesMonitor(s *corev1.Service) bool {
	for _, p := range s.Spec.Ports {
		if p.Port == 8222 {
			return true
		}
	}
	return false
}
