package realcharts

import (
	"fmt"
	"strings"
)

// MonitoringStack is the shape of the monitoring chart WriteMonitoringStack writes.
const MonitoringStack = `115+ objects of 18 kinds (35 PrometheusRule, 33 ConfigMaps with dashboards of up to ~100 KB,
13 ServiceMonitor, 11 Service, RBAC, 3 Deployments, a DaemonSet, a Prometheus and an Alertmanager
custom resource, validating and mutating webhook configurations), four subcharts, 10 CRDs of
4.5 MB in a subchart's crds/ directory, pre- and post-install/upgrade hook Jobs each with its own
ServiceAccount, ClusterRole, ClusterRoleBinding, Role and RoleBinding hooks`

// monitoringFiles are the files of the monitoring stack chart, by path in the chart directory.
func monitoringFiles() map[string]string {
	f := map[string]string{
		"Chart.yaml": `apiVersion: v2
name: monstack
description: A monitoring stack shaped like the widely used one (generated for sealane's benchmarks)
type: application
version: 65.1.0
appVersion: v0.77.1
kubeVersion: ">=1.19.0-0"
dependencies:
- name: crds
  version: 0.0.0
  condition: crds.enabled
- name: kube-state-metrics
  version: 5.25.1
  condition: kubeStateMetrics.enabled
- name: prometheus-node-exporter
  version: 4.39.0
  condition: nodeExporter.enabled
- name: grafana
  version: 8.5.1
  condition: grafana.enabled
`,
		"values.yaml":                         monitoringValues(),
		"templates/_helpers.tpl":              monitoringHelpers,
		"templates/operator.yaml":             operatorTemplates,
		"templates/prometheus.yaml":           prometheusTemplates,
		"templates/alertmanager.yaml":         alertmanagerTemplates,
		"templates/exporters.yaml":            exporterTemplates,
		"templates/webhooks.yaml":             webhookTemplates,
		"templates/admission/job-create.yaml": hookJob("create", "pre-install,pre-upgrade", "create"),
		"templates/admission/job-patch.yaml":  hookJob("patch", "post-install,post-upgrade", "patch"),
		"templates/grafana/config.yaml":       grafanaConfigTemplates,
		"templates/NOTES.txt": `monstack has been installed. Check its status by running:
  kubectl --namespace {{ .Release.Namespace }} get pods -l "release={{ .Release.Name }}"
`,
		"charts/crds/Chart.yaml": "apiVersion: v2\nname: crds\nversion: 0.0.0\ndescription: The stack's CRDs\n",
		"charts/crds/README.md":  "The CRDs live in crds/: Helm installs them before the chart and never upgrades them.\n",
	}
	for i, c := range monitoringCRDs {
		f["charts/crds/crds/crd-"+c.plural+".yaml"] = crdYAML(c, uint64(i+1))
	}
	for i, g := range ruleGroups {
		f["templates/prometheus/rules/"+g+".yaml"] = ruleTemplate(g, uint64(100+i))
	}
	for i, d := range dashboards {
		f["templates/grafana/dashboards/"+d.name+".yaml"] = dashboardTemplate(d.name, d.kb, uint64(200+i))
	}
	for path, content := range kubeStateMetricsFiles() {
		f["charts/kube-state-metrics/"+path] = content
	}
	for path, content := range nodeExporterFiles() {
		f["charts/prometheus-node-exporter/"+path] = content
	}
	for path, content := range grafanaFiles() {
		f["charts/grafana/"+path] = content
	}
	return f
}

// monitoringValues is the stack's values.yaml: every rule group switched on, and the knobs the
// templates read (gen goes into the operator's pod template: change it to roll one Deployment).
func monitoringValues() string {
	var b strings.Builder
	b.WriteString(`# gen is written into the operator Deployment's pod template: --set gen=N rolls it.
gen: 1
nameOverride: ""
fullnameOverride: ""
commonLabels: {}
crds:
  enabled: true
kubeStateMetrics:
  enabled: true
nodeExporter:
  enabled: true
grafana:
  enabled: true
  adminPassword: prom-operator
  defaultDashboardsEnabled: true
defaultRules:
  create: true
  job: kube-state-metrics
  runbookUrl: https://runbooks.example.com/runbooks
  labels: {}
  additionalRuleLabels: {}
  rules:
`)
	for _, g := range ruleGroups {
		fmt.Fprintf(&b, "    %s: true\n", camel(g))
	}
	b.WriteString(`prometheusOperator:
  enabled: true
  image: {registry: quay.io, repository: prometheus-operator/prometheus-operator, tag: v0.77.1}
  resources: {limits: {cpu: 200m, memory: 200Mi}, requests: {cpu: 100m, memory: 100Mi}}
  admissionWebhooks:
    enabled: true
    failurePolicy: Ignore
    timeoutSeconds: 10
    image: {registry: registry.k8s.io, repository: ingress-nginx/kube-webhook-certgen, tag: v20221220}
prometheus:
  enabled: true
  replicas: 1
  retention: 10d
  image: {registry: quay.io, repository: prometheus/prometheus, tag: v2.54.1}
alertmanager:
  enabled: true
  replicas: 1
  config:
    global: {resolve_timeout: 5m}
    route: {group_by: [namespace], group_wait: 30s, group_interval: 5m, repeat_interval: 12h, receiver: "null"}
    receivers: [{name: "null"}]
exporters:
`)
	for _, e := range exporters {
		fmt.Fprintf(&b, "  %s: {enabled: true, port: %d}\n", camel(e.name), e.port)
	}
	return b.String()
}

// exporters are the control-plane components the stack scrapes through Services of its own.
var exporters = []struct {
	name string
	port int
}{{"coredns", 9153}, {"kube-controller-manager", 10257}, {"kube-scheduler", 10259}, {"kube-etcd", 2381}, {"kube-proxy", 10249}}

func dashboardTemplate(name string, kb int, seed uint64) string {
	return fmt.Sprintf(`{{- if and .Values.grafana.enabled .Values.grafana.defaultDashboardsEnabled }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ printf "%%s-%%s" (include "monstack.fullname" .) %q | trunc 63 | trimSuffix "-" }}
  namespace: {{ .Release.Namespace }}
  labels:
    grafana_dashboard: "1"
    app: {{ include "monstack.name" . }}-grafana
{{ include "monstack.labels" . | indent 4 }}
data:
  %s.json: |-
    %s
{{- end }}
`, name, name, dashboardJSON(name, kb, seed))
}

const monitoringHelpers = `{{- define "monstack.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 50 | trimSuffix "-" -}}
{{- end }}

{{- define "monstack.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 26 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 26 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 26 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- define "monstack.chartref" -}}
{{- replace "+" "_" .Chart.Version | printf "%s-%s" .Chart.Name -}}
{{- end }}

{{- define "monstack.labels" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: "{{ replace "+" "_" .Chart.Version }}"
app.kubernetes.io/part-of: {{ template "monstack.name" . }}
chart: {{ template "monstack.chartref" . }}
release: {{ .Release.Name | quote }}
heritage: {{ .Release.Service | quote }}
{{- if .Values.commonLabels }}
{{ toYaml .Values.commonLabels }}
{{- end }}
{{- end }}

{{- define "monstack.image" -}}
{{- printf "%s/%s:%s" .registry .repository .tag -}}
{{- end }}

{{- define "monstack.servicemonitor" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    app: {{ .app }}
{{ include "monstack.labels" .root | indent 4 }}
spec:
  jobLabel: jobLabel
  selector:
    matchLabels:
      app: {{ .app }}
      release: {{ .root.Release.Name | quote }}
  namespaceSelector:
    matchNames:
    - {{ .root.Release.Namespace }}
  endpoints:
  - port: {{ .port }}
    interval: 30s
    scheme: http
    metricRelabelings:
    - action: drop
      regex: (apiserver_request_slo_duration_seconds_bucket|etcd_request_duration_seconds_bucket)
      sourceLabels: [__name__]
    relabelings:
    - action: replace
      targetLabel: cluster
      replacement: sandbox
{{- end }}
`

const operatorTemplates = `{{- $full := include "monstack.fullname" . }}
{{- $op := .Values.prometheusOperator }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $full }}-operator
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-operator
{{ include "monstack.labels" . | indent 4 }}
automountServiceAccountToken: true
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $full }}-operator
  labels:
    app: {{ include "monstack.name" . }}-operator
{{ include "monstack.labels" . | indent 4 }}
rules:
- apiGroups: [monitoring.coreos.com]
  resources: [alertmanagers, alertmanagers/finalizers, alertmanagers/status, alertmanagerconfigs, prometheuses,
    prometheuses/finalizers, prometheuses/status, prometheusagents, prometheusagents/finalizers, prometheusagents/status,
    thanosrulers, thanosrulers/finalizers, thanosrulers/status, scrapeconfigs, servicemonitors, podmonitors, probes, prometheusrules]
  verbs: ["*"]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: ["*"]
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: ["*"]
- apiGroups: [""]
  resources: [pods]
  verbs: [list, delete]
- apiGroups: [""]
  resources: [services, services/finalizers, endpoints]
  verbs: [get, create, update, delete]
- apiGroups: [""]
  resources: [nodes]
  verbs: [list, watch]
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $full }}-operator
  labels:
    app: {{ include "monstack.name" . }}-operator
{{ include "monstack.labels" . | indent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $full }}-operator
subjects:
- kind: ServiceAccount
  name: {{ $full }}-operator
  namespace: {{ .Release.Namespace }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $full }}-operator
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-operator
{{ include "monstack.labels" . | indent 4 }}
spec:
  ports:
  - name: https
    port: 443
    targetPort: https
  selector:
    app: {{ include "monstack.name" . }}-operator
    release: {{ .Release.Name | quote }}
  type: ClusterIP
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $full }}-operator
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-operator
{{ include "monstack.labels" . | indent 4 }}
spec:
  replicas: 1
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: {{ include "monstack.name" . }}-operator
      release: {{ .Release.Name | quote }}
  template:
    metadata:
      labels:
        app: {{ include "monstack.name" . }}-operator
{{ include "monstack.labels" . | indent 8 }}
      annotations:
        checksum/gen: {{ .Values.gen | quote }}
    spec:
      serviceAccountName: {{ $full }}-operator
      automountServiceAccountToken: true
      containers:
      - name: prometheus-operator
        image: {{ include "monstack.image" $op.image }}
        imagePullPolicy: IfNotPresent
        args:
        - --kubelet-service={{ .Release.Namespace }}/{{ $full }}-kubelet
        - --localhost=127.0.0.1
        - --prometheus-config-reloader={{ include "monstack.image" $op.image }}
        - --config-reloader-cpu-request=0
        - --web.enable-tls=true
        - --web.listen-address=:10250
        ports:
        - containerPort: 10250
          name: https
        resources:
{{ toYaml $op.resources | indent 10 }}
        readinessProbe:
          httpGet: {path: /healthz, port: https, scheme: HTTPS}
          initialDelaySeconds: 0
          periodSeconds: 10
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
      securityContext:
        fsGroup: 65534
        runAsGroup: 65534
        runAsNonRoot: true
        runAsUser: 65534
        seccompProfile: {type: RuntimeDefault}
---
{{- include "monstack.servicemonitor" (dict "root" . "name" (printf "%s-operator" $full) "app" (printf "%s-operator" (include "monstack.name" .)) "port" "https") }}
`

const prometheusTemplates = `{{- $full := include "monstack.fullname" . }}
{{- $p := .Values.prometheus }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $full }}-prometheus
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-prometheus
{{ include "monstack.labels" . | indent 4 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $full }}-prometheus
  labels:
    app: {{ include "monstack.name" . }}-prometheus
{{ include "monstack.labels" . | indent 4 }}
rules:
- apiGroups: [""]
  resources: [nodes, nodes/metrics, services, endpoints, pods]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, list, watch]
- nonResourceURLs: [/metrics, /metrics/cadvisor]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $full }}-prometheus
  labels:
    app: {{ include "monstack.name" . }}-prometheus
{{ include "monstack.labels" . | indent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $full }}-prometheus
subjects:
- kind: ServiceAccount
  name: {{ $full }}-prometheus
  namespace: {{ .Release.Namespace }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $full }}-prometheus
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-prometheus
    self-monitor: "true"
{{ include "monstack.labels" . | indent 4 }}
spec:
  ports:
  - name: http-web
    port: 9090
    targetPort: 9090
  - name: reloader-web
    port: 8080
    targetPort: reloader-web
  selector:
    app.kubernetes.io/name: prometheus
    operator.prometheus.io/name: {{ $full }}-prometheus
  sessionAffinity: None
  type: ClusterIP
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: {{ $full }}-prometheus
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-prometheus
{{ include "monstack.labels" . | indent 4 }}
spec:
  image: {{ include "monstack.image" $p.image }}
  replicas: {{ $p.replicas }}
  retention: {{ $p.retention | quote }}
  serviceAccountName: {{ $full }}-prometheus
  externalUrl: http://{{ $full }}-prometheus.{{ .Release.Namespace }}:9090
  alerting:
    alertmanagers:
    - namespace: {{ .Release.Namespace }}
      name: {{ $full }}-alertmanager
      port: http-web
      pathPrefix: "/"
      apiVersion: v2
  ruleSelector:
    matchLabels:
      release: {{ .Release.Name | quote }}
  serviceMonitorSelector:
    matchLabels:
      release: {{ .Release.Name | quote }}
  podMonitorSelector:
    matchLabels:
      release: {{ .Release.Name | quote }}
  securityContext:
    fsGroup: 2000
    runAsGroup: 2000
    runAsNonRoot: true
    runAsUser: 1000
    seccompProfile: {type: RuntimeDefault}
  portName: http-web
  hostNetwork: false
---
{{- include "monstack.servicemonitor" (dict "root" . "name" (printf "%s-prometheus" $full) "app" (printf "%s-prometheus" (include "monstack.name" .)) "port" "http-web") }}
`

const alertmanagerTemplates = `{{- $full := include "monstack.fullname" . }}
{{- $a := .Values.alertmanager }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $full }}-alertmanager
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-alertmanager
{{ include "monstack.labels" . | indent 4 }}
---
apiVersion: v1
kind: Secret
metadata:
  name: alertmanager-{{ $full }}-alertmanager
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-alertmanager
{{ include "monstack.labels" . | indent 4 }}
data:
  alertmanager.yaml: {{ toYaml $a.config | b64enc | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $full }}-alertmanager
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-alertmanager
    self-monitor: "true"
{{ include "monstack.labels" . | indent 4 }}
spec:
  ports:
  - name: http-web
    port: 9093
    targetPort: 9093
  selector:
    app.kubernetes.io/name: alertmanager
    alertmanager: {{ $full }}-alertmanager
  type: ClusterIP
---
apiVersion: monitoring.coreos.com/v1
kind: Alertmanager
metadata:
  name: {{ $full }}-alertmanager
  namespace: {{ .Release.Namespace }}
  labels:
    app: {{ include "monstack.name" . }}-alertmanager
{{ include "monstack.labels" . | indent 4 }}
spec:
  image: quay.io/prometheus/alertmanager:v0.27.0
  replicas: {{ $a.replicas }}
  serviceAccountName: {{ $full }}-alertmanager
  externalUrl: http://{{ $full }}-alertmanager.{{ .Release.Namespace }}:9093
  retention: 120h
  portName: http-web
  securityContext:
    fsGroup: 2000
    runAsNonRoot: true
    runAsUser: 1000
---
{{- include "monstack.servicemonitor" (dict "root" . "name" (printf "%s-alertmanager" $full) "app" (printf "%s-alertmanager" (include "monstack.name" .)) "port" "http-web") }}
`

// exporterTemplates are the Services and ServiceMonitors of the control-plane components, plus
// the kubelet's and the apiserver's ServiceMonitors.
const exporterTemplates = `{{- $full := include "monstack.fullname" . }}
{{- range $name, $e := .Values.exporters }}
{{- if $e.enabled }}
{{- $app := printf "%s-%s" (include "monstack.name" $) ($name | kebabcase) }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ printf "%s-%s" $full ($name | kebabcase) | trunc 63 }}
  namespace: {{ $.Release.Namespace }}
  labels:
    app: {{ $app }}
    jobLabel: {{ $name | kebabcase }}
{{ include "monstack.labels" $ | indent 4 }}
spec:
  clusterIP: None
  ports:
  - name: http-metrics
    port: {{ $e.port }}
    protocol: TCP
    targetPort: {{ $e.port }}
  selector:
    component: {{ $name | kebabcase }}
  type: ClusterIP
---
{{- include "monstack.servicemonitor" (dict "root" $ "name" (printf "%s-%s" $full ($name | kebabcase) | trunc 63) "app" $app "port" "http-metrics") }}
{{- end }}
{{- end }}
---
{{- include "monstack.servicemonitor" (dict "root" . "name" (printf "%s-kubelet" $full) "app" (printf "%s-kubelet" (include "monstack.name" .)) "port" "https-metrics") }}
---
{{- include "monstack.servicemonitor" (dict "root" . "name" (printf "%s-apiserver" $full) "app" (printf "%s-apiserver" (include "monstack.name" .)) "port" "https") }}
`

// webhookTemplates are the operator's admission webhooks. They select objects by a label no
// object carries, so the apiserver never calls the (fake) operator: what a call costs depends
// on the network of the cluster, not on the deploy tool.
const webhookTemplates = `{{- $full := include "monstack.fullname" . }}
{{- $w := .Values.prometheusOperator.admissionWebhooks }}
{{- if $w.enabled }}
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: {{ $full }}-admission
  labels:
    app: {{ include "monstack.name" . }}-admission
{{ include "monstack.labels" . | indent 4 }}
webhooks:
- name: prometheusrulemutate.monitoring.coreos.com
  failurePolicy: {{ $w.failurePolicy }}
  rules:
  - apiGroups: [monitoring.coreos.com]
    apiVersions: ["*"]
    resources: [prometheusrules]
    operations: [CREATE, UPDATE]
  clientConfig:
    service:
      namespace: {{ .Release.Namespace }}
      name: {{ $full }}-operator
      path: /admission-prometheusrules/mutate
  objectSelector:
    matchLabels:
      bench.sealane.dev/webhook: call
  timeoutSeconds: {{ $w.timeoutSeconds }}
  admissionReviewVersions: [v1, v1beta1]
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: {{ $full }}-admission
  labels:
    app: {{ include "monstack.name" . }}-admission
{{ include "monstack.labels" . | indent 4 }}
webhooks:
- name: prometheusrulevalidate.monitoring.coreos.com
  failurePolicy: {{ $w.failurePolicy }}
  rules:
  - apiGroups: [monitoring.coreos.com]
    apiVersions: ["*"]
    resources: [prometheusrules]
    operations: [CREATE, UPDATE]
  clientConfig:
    service:
      namespace: {{ .Release.Namespace }}
      name: {{ $full }}-operator
      path: /admission-prometheusrules/validate
  objectSelector:
    matchLabels:
      bench.sealane.dev/webhook: call
  timeoutSeconds: {{ $w.timeoutSeconds }}
  admissionReviewVersions: [v1, v1beta1]
  sideEffects: None
{{- end }}
`

// hookJob is one admission hook: a Job (weight 0) and, at weight -5, its own ServiceAccount,
// ClusterRole, ClusterRoleBinding, Role and RoleBinding, all hooks deleted before the next
// creation and when they succeed.
func hookJob(name, hooks, arg string) string {
	meta := func(kind, weight string, namespaced bool) string {
		ns := ""
		if namespaced {
			ns = "\n  namespace: {{ .Release.Namespace }}"
		}
		return fmt.Sprintf(`kind: %s
metadata:
  name: {{ $full }}-admission-%s%s
  annotations:
    helm.sh/hook: %s
    helm.sh/hook-weight: "%s"
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
  labels:
    app: {{ include "monstack.name" . }}-admission-%s
{{ include "monstack.labels" . | indent 4 }}`, kind, name, ns, hooks, weight, name)
	}
	return `{{- $full := include "monstack.fullname" . }}
{{- $w := .Values.prometheusOperator.admissionWebhooks }}
{{- if $w.enabled }}
apiVersion: v1
` + meta("ServiceAccount", "-5", true) + `
---
apiVersion: rbac.authorization.k8s.io/v1
` + meta("ClusterRole", "-5", false) + `
rules:
- apiGroups: [admissionregistration.k8s.io]
  resources: [validatingwebhookconfigurations, mutatingwebhookconfigurations]
  verbs: [get, update]
---
apiVersion: rbac.authorization.k8s.io/v1
` + meta("ClusterRoleBinding", "-5", false) + `
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $full }}-admission-` + name + `
subjects:
- kind: ServiceAccount
  name: {{ $full }}-admission-` + name + `
  namespace: {{ .Release.Namespace }}
---
apiVersion: rbac.authorization.k8s.io/v1
` + meta("Role", "-5", true) + `
rules:
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create]
---
apiVersion: rbac.authorization.k8s.io/v1
` + meta("RoleBinding", "-5", true) + `
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $full }}-admission-` + name + `
subjects:
- kind: ServiceAccount
  name: {{ $full }}-admission-` + name + `
  namespace: {{ .Release.Namespace }}
---
apiVersion: batch/v1
` + meta("Job", "0", true) + `
spec:
  ttlSecondsAfterFinished: 60
  backoffLimit: 6
  template:
    metadata:
      name: {{ $full }}-admission-` + name + `
      labels:
        app: {{ include "monstack.name" . }}-admission-` + name + `
    spec:
      restartPolicy: OnFailure
      serviceAccountName: {{ $full }}-admission-` + name + `
      containers:
      - name: ` + arg + `
        image: {{ include "monstack.image" $w.image }}
        imagePullPolicy: IfNotPresent
        args:
        - ` + arg + `
        - --namespace={{ .Release.Namespace }}
        - --secret-name={{ $full }}-admission
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
      securityContext:
        runAsGroup: 2000
        runAsNonRoot: true
        runAsUser: 2000
{{- end }}
`
}

const grafanaConfigTemplates = `{{- if .Values.grafana.enabled }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "monstack.fullname" . }}-grafana-datasource
  namespace: {{ .Release.Namespace }}
  labels:
    grafana_datasource: "1"
    app: {{ include "monstack.name" . }}-grafana
{{ include "monstack.labels" . | indent 4 }}
data:
  datasource.yaml: |-
    apiVersion: 1
    datasources:
    - name: Prometheus
      type: prometheus
      uid: prometheus
      url: http://{{ include "monstack.fullname" . }}-prometheus.{{ .Release.Namespace }}:9090/
      access: proxy
      isDefault: true
      jsonData:
        httpMethod: POST
        timeInterval: 30s
    - name: Alertmanager
      type: alertmanager
      uid: alertmanager
      url: http://{{ include "monstack.fullname" . }}-alertmanager.{{ .Release.Namespace }}:9093/
      access: proxy
      jsonData:
        handleGrafanaManagedAlerts: false
        implementation: prometheus
{{- end }}
`
