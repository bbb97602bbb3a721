package realcharts

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// dashboardJSON is a Grafana-like dashboard of about kb KiB, its Grafana legend placeholders
// escaped for Helm's template engine as real charts escape them.
func dashboardJSON(title string, kb int, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0xda5b))
	var b strings.Builder
	fmt.Fprintf(&b, `{"annotations":{"list":[]},"editable":true,"graphTooltip":1,"title":%q,"uid":"%x","panels":[`, title, seed)
	for i := 0; b.Len() < kb<<10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		metric := words[rng.IntN(len(words))] + "_" + words[rng.IntN(len(words))]
		fmt.Fprintf(&b, `{"id":%d,"type":"timeseries","title":%q,"description":%q,`+
			`"gridPos":{"h":8,"w":12,"x":%d,"y":%d},"datasource":{"type":"prometheus","uid":"$datasource"},`+
			`"fieldConfig":{"defaults":{"unit":"short","min":0},"overrides":[]},`+
			`"targets":[{"expr":"sum(rate(%s_total{cluster=\"$cluster\", namespace=\"$namespace\"}[$__rate_interval])) by (pod)",`+
			`"legendFormat":"{{ "{{" }}pod{{ "}}" }}","refId":"A"},`+
			`{"expr":"histogram_quantile(0.99, sum(rate(%s_seconds_bucket{job=\"$job\"}[5m])) by (le, instance))",`+
			`"legendFormat":"{{ "{{" }}instance{{ "}}" }} p99","refId":"B"}]}`,
			i+1, description(rng, 4), description(rng, 12+rng.IntN(20)), (i%2)*12, (i/2)*8, metric, metric)
	}
	b.WriteString(`],"templating":{"list":[{"name":"datasource","type":"datasource","query":"prometheus"},` +
		`{"name":"cluster","type":"query","query":"label_values(up, cluster)"},` +
		`{"name":"namespace","type":"query","query":"label_values(kube_pod_info, namespace)"}]},` +
		`"time":{"from":"now-1h","to":"now"},"schemaVersion":39}`)
	return b.String()
}

// ruleTemplate is one PrometheusRule template file: alerting and recording rules of a group,
// behind the chart's per-group switch, with Prometheus template placeholders escaped.
func ruleTemplate(name string, seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0x71e))
	key := camel(name)
	var b strings.Builder
	fmt.Fprintf(&b, `{{- if and .Values.defaultRules.create .Values.defaultRules.rules.%[1]s }}
apiVersion: %[3]s/v1
kind: PrometheusRule
metadata:
  name: {{ include "monstack.fullname" . }}-%[2]s
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}
{{ include "monstack.labels" . | indent 4 }}
{{- with .Values.defaultRules.labels }}
{{ toYaml . | indent 4 }}
{{- end }}
spec:
  groups:
  - name: %[2]s
    rules:
`, key, name, MonitoringGroup)
	for i := range 4 + rng.IntN(8) {
		metric := words[rng.IntN(len(words))] + "_" + words[rng.IntN(len(words))]
		fmt.Fprintf(&b, `    - alert: %[1]s%[2]d
      annotations:
        description: '{{ "{{" }} $labels.namespace {{ "}}" }}/{{ "{{" }} $labels.pod {{ "}}" }} %[3]s'
        runbook_url: {{ .Values.defaultRules.runbookUrl }}/%[4]s/%[5]s%[2]d
        summary: %[6]s
      expr: |-
        sum by (namespace, pod, cluster) (rate(%[7]s_total{job="{{ $.Values.defaultRules.job }}"}[5m])) > %[8]d
        and on (cluster) max(up{job="{{ $.Values.defaultRules.job }}"}) == 1
      for: {{ dig "for" "15m" .Values.defaultRules.rules }}
      labels:
        severity: {{ dig "severity" "warning" .Values.defaultRules.rules }}
{{- with .Values.defaultRules.additionalRuleLabels }}
{{ toYaml . | indent 8 }}
{{- end }}
`, camelUpper(name), i, description(rng, 25), name, strings.ToLower(camelUpper(name)), description(rng, 8), metric, rng.IntN(100))
	}
	b.WriteString("{{- end }}\n")
	return b.String()
}

func camel(s string) string {
	parts := strings.Split(s, "-")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

func camelUpper(s string) string {
	c := camel(s)
	return strings.ToUpper(c[:1]) + c[1:]
}

// ruleGroups are the stack's 35 rule groups (one PrometheusRule each).
var ruleGroups = []string{
	"alertmanager", "config-reloaders", "etcd", "general", "k8s-pod-cpu", "k8s-pod-memory",
	"k8s-pod-owner", "kube-apiserver-availability", "kube-apiserver-burnrate", "kube-apiserver-histogram",
	"kube-apiserver-slos", "kube-prometheus-general", "kube-prometheus-node-recording", "kube-scheduler",
	"kube-state-metrics", "kubelet", "kubernetes-apps", "kubernetes-resources", "kubernetes-storage",
	"kubernetes-system", "kubernetes-system-apiserver", "kubernetes-system-kubelet",
	"kubernetes-system-controller-manager", "kubernetes-system-scheduler", "node-exporter",
	"node-exporter-recording", "node-network", "node", "prometheus-operator", "prometheus",
	"kube-proxy", "coredns", "windows-node", "windows-pod", "k8s-pod-network",
}

// dashboards are the 28 dashboard ConfigMaps and the size of each, KiB.
var dashboards = []struct {
	name string
	kb   int
}{
	{"alertmanager-overview", 6}, {"apiserver", 98}, {"cluster-total", 11}, {"controller-manager", 18},
	{"etcd", 15}, {"grafana-overview", 7}, {"k8s-coredns", 12}, {"k8s-resources-cluster", 24},
	{"k8s-resources-multicluster", 10}, {"k8s-resources-namespace", 22}, {"k8s-resources-node", 8},
	{"k8s-resources-pod", 20}, {"k8s-resources-workload", 16}, {"k8s-resources-workloads-namespace", 17},
	{"kubelet", 23}, {"namespace-by-pod", 13}, {"namespace-by-workload", 14}, {"node-cluster-rsrc-use", 9},
	{"node-rsrc-use", 9}, {"nodes-darwin", 10}, {"nodes", 11}, {"persistentvolumesusage", 5},
	{"pod-total", 9}, {"prometheus-remote-write", 10}, {"prometheus", 15}, {"proxy", 14},
	{"scheduler", 12}, {"workload-total", 10},
}
