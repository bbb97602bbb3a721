package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/pkg/chart"
)

// object is one rendered manifest.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }

// get reads the value at path (map keys) in o.
func (o object) get(path ...string) any {
	var v any = map[string]any(o)
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (o object) name() string { s, _ := o.get("metadata", "name").(string); return s }

// strings reads the map of strings at path.
func (o object) strings(path ...string) map[string]string {
	out := map[string]string{}
	m, _ := o.get(path...).(map[string]any)
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// render renders deployments/chart as `helm template sealane -n sealane` with values.
func render(t *testing.T, values string) ([]object, error) {
	t.Helper()
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(values), &vals); err != nil {
		t.Fatal(err)
	}
	r, err := chart.Render(ch, vals, chart.Release{Name: "sealane", Namespace: "sealane"}, chart.Options{})
	if err != nil {
		return nil, err
	}
	var objs []object
	for _, doc := range strings.Split(r.Manifest, "\n---\n") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered manifest: %v\n%s", err, doc)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs, nil
}

func mustRender(t *testing.T, values string) []object {
	t.Helper()
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func ofKind(objs []object, kind string) []object {
	var out []object
	for _, o := range objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// isDashboard reports a ConfigMap carrying the dashboard.
func isDashboard(o object) bool {
	return o.kind() == "ConfigMap" && o.get("data", "sealane.json") != nil
}

// With the default values the chart renders no monitoring object.
func TestChartMonitoringOff(t *testing.T) {
	for _, o := range mustRender(t, "") {
		switch {
		case o.kind() == "ServiceMonitor", o.kind() == "PodMonitor", o.kind() == "PrometheusRule":
			t.Errorf("%s %s rendered with monitoring off", o.kind(), o.name())
		case isDashboard(o), strings.HasSuffix(o.name(), "-metrics"):
			t.Errorf("%s %s rendered with monitoring off", o.kind(), o.name())
		}
	}
}

// monitoringOn switches every monitoring object on, with the webhook intake serving HTTPS.
const monitoringOn = `
webhook: {enabled: true, tlsSecretName: webhook-tls, config: {receivers: [{id: shop}]}}
monitoring:
  additionalLabels: {release: kube-prometheus-stack}
  serviceMonitor: {enabled: true, interval: 15s}
  webhookTLSConfig: {serverName: hooks.example.com}
  prometheusRule: {enabled: true}
  dashboard: {enabled: true, namespace: grafana}
`

// Switched on, every component serving /metrics gets a ServiceMonitor with the labels the
// Prometheus selects; each selects exactly one Service, whose metrics port reaches a named
// port of the component's pods.
func TestChartServiceMonitors(t *testing.T) {
	objs := mustRender(t, monitoringOn)
	var got []string
	for _, sm := range ofKind(objs, "ServiceMonitor") {
		got = append(got, sm.name())
		if sm.strings("metadata", "labels")["release"] != "kube-prometheus-stack" {
			t.Errorf("ServiceMonitor %s: labels %v, want release: kube-prometheus-stack", sm.name(), sm.strings("metadata", "labels"))
		}
		endpoints, _ := sm.get("spec", "endpoints").([]any)
		if len(endpoints) != 1 {
			t.Fatalf("ServiceMonitor %s: %d endpoints, want 1", sm.name(), len(endpoints))
		}
		ep := object(endpoints[0].(map[string]any))
		if ep.get("path") != "/metrics" || ep.get("interval") != "15s" {
			t.Errorf("ServiceMonitor %s: endpoint %v, want path /metrics every 15s", sm.name(), ep)
		}
		wantScheme := "http"
		if sm.name() == "sealane-webhook" {
			wantScheme = "https"
			if ep.get("tlsConfig", "serverName") != "hooks.example.com" {
				t.Errorf("ServiceMonitor %s: tlsConfig %v", sm.name(), ep.get("tlsConfig"))
			}
		}
		if ep.get("scheme") != wantScheme {
			t.Errorf("ServiceMonitor %s: scheme %v, want %s", sm.name(), ep.get("scheme"), wantScheme)
		}
		svc := selectedService(t, objs, sm)
		target := servicePort(t, svc, ep.get("port").(string))
		if !podsHavePort(objs, svc.strings("spec", "selector"), target) {
			t.Errorf("ServiceMonitor %s: Service %s targets port %q, which no selected pod names", sm.name(), svc.name(), target)
		}
	}
	want := []string{"sealane-applier", "sealane-recorder", "sealane-renderer", "sealane-rollout", "sealane-tracker", "sealane-webhook"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("ServiceMonitors %v, want %v", got, want)
	}
	if n := len(ofKind(objs, "PodMonitor")); n != 0 {
		t.Errorf("%d PodMonitors beside the ServiceMonitors", n)
	}
}

// selectedService is the one Service whose labels sm's selector matches.
func selectedService(t *testing.T, objs []object, sm object) object {
	t.Helper()
	sel := sm.strings("spec", "selector", "matchLabels")
	var found []object
	for _, svc := range ofKind(objs, "Service") {
		if matches(sel, svc.strings("metadata", "labels")) {
			found = append(found, svc)
		}
	}
	if len(found) != 1 {
		t.Fatalf("ServiceMonitor %s selects %d Services, want 1", sm.name(), len(found))
	}
	return found[0]
}

// servicePort is the targetPort of svc's port named name.
func servicePort(t *testing.T, svc object, name string) string {
	t.Helper()
	ports, _ := svc.get("spec", "ports").([]any)
	for _, p := range ports {
		if p := object(p.(map[string]any)); p.get("name") == name {
			target, _ := p.get("targetPort").(string)
			return target
		}
	}
	t.Fatalf("Service %s has no port %s", svc.name(), name)
	return ""
}

// podsHavePort reports whether a Deployment's pods matching selector name a container port port.
func podsHavePort(objs []object, selector map[string]string, port string) bool {
	for _, d := range ofKind(objs, "Deployment") {
		if !matches(selector, d.strings("spec", "template", "metadata", "labels")) {
			continue
		}
		containers, _ := d.get("spec", "template", "spec", "containers").([]any)
		for _, c := range containers {
			ports, _ := object(c.(map[string]any)).get("ports").([]any)
			for _, p := range ports {
				if object(p.(map[string]any)).get("name") == port {
					return true
				}
			}
		}
	}
	return false
}

// matches reports whether labels hold every pair of selector (a non-empty one).
func matches(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// The PrometheusRule carries files/alerts.yaml's groups unchanged, and the dashboard ConfigMap
// files/dashboard.json, labelled for the Grafana sidecar in the namespace asked.
func TestChartRulesAndDashboard(t *testing.T) {
	objs := mustRender(t, monitoringOn)
	rules := ofKind(objs, "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	raw, err := os.ReadFile(filepath.Join(chartDir, AlertsFile))
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]any
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(file["groups"], rules[0].get("spec", "groups")); diff != "" {
		t.Errorf("PrometheusRule groups differ from %s (-file +rendered):\n%s", AlertsFile, diff)
	}
	if rules[0].strings("metadata", "labels")["release"] != "kube-prometheus-stack" {
		t.Errorf("PrometheusRule labels %v, want release: kube-prometheus-stack", rules[0].strings("metadata", "labels"))
	}

	var dashboards []object
	for _, o := range objs {
		if isDashboard(o) {
			dashboards = append(dashboards, o)
		}
	}
	if len(dashboards) != 1 {
		t.Fatalf("%d dashboard ConfigMaps, want 1", len(dashboards))
	}
	cm := dashboards[0]
	if l := cm.strings("metadata", "labels"); l["grafana_dashboard"] != "1" || l["release"] != "kube-prometheus-stack" {
		t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard: \"1\" and release", l)
	}
	if ns := cm.get("metadata", "namespace"); ns != "grafana" {
		t.Errorf("dashboard ConfigMap in namespace %v, want grafana", ns)
	}
	want, err := os.ReadFile(filepath.Join(chartDir, DashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := cm.get("data", "sealane.json").(string)
	if strings.TrimSpace(got) != strings.TrimSpace(string(want)) || !json.Valid([]byte(got)) {
		t.Errorf("dashboard ConfigMap holds %d bytes, not %s's %d", len(got), DashboardFile, len(want))
	}
}

// The sidecar's label is a value; PodMonitors replace the ServiceMonitors and their Services;
// both at once is refused.
func TestChartPodMonitorsAndLabels(t *testing.T) {
	objs := mustRender(t, `
monitoring:
  podMonitor: {enabled: true}
  dashboard: {enabled: true, label: sidecar_dashboard, labelValue: "yes"}
`)
	var got []string
	for _, pm := range ofKind(objs, "PodMonitor") {
		got = append(got, pm.name())
		endpoints, _ := pm.get("spec", "podMetricsEndpoints").([]any)
		if len(endpoints) != 1 {
			t.Fatalf("PodMonitor %s: %d endpoints, want 1", pm.name(), len(endpoints))
		}
		port, _ := object(endpoints[0].(map[string]any)).get("port").(string)
		if !podsHavePort(objs, pm.strings("spec", "selector", "matchLabels"), port) {
			t.Errorf("PodMonitor %s scrapes port %q, which no selected pod names", pm.name(), port)
		}
	}
	want := []string{"sealane-applier", "sealane-recorder", "sealane-renderer", "sealane-rollout", "sealane-tracker"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("PodMonitors %v, want %v", got, want)
	}
	for _, o := range objs {
		if o.kind() == "ServiceMonitor" || strings.HasSuffix(o.name(), "-metrics") {
			t.Errorf("%s %s rendered with only podMonitor on", o.kind(), o.name())
		}
		if isDashboard(o) && o.strings("metadata", "labels")["sidecar_dashboard"] != "yes" {
			t.Errorf("dashboard ConfigMap labels %v, want sidecar_dashboard: yes", o.strings("metadata", "labels"))
		}
	}
	_, err := render(t, "monitoring: {podMonitor: {enabled: true}, serviceMonitor: {enabled: true}}")
	if err == nil || !strings.Contains(err.Error(), "enable one of them") {
		t.Errorf("both monitors on: %v, want a refusal", err)
	}
}
