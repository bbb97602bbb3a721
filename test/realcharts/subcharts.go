package realcharts

// The three subcharts with templates (the fourth, crds, has only its crds/ directory).

const subchartHelpers = `{{- define "sub.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end }}

{{- define "sub.labels" }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
release: {{ .Release.Name | quote }}
{{- end }}

{{- define "sub.selector" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sub.servicemonitor" }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
spec:
  jobLabel: app.kubernetes.io/name
  selector:
    matchLabels:
{{- include "sub.selector" . | indent 6 }}
  endpoints:
  - port: http
    interval: 30s
    honorLabels: true
{{- end }}
`

func kubeStateMetricsFiles() map[string]string {
	return map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: kube-state-metrics\nversion: 5.25.1\nappVersion: 2.13.0\n",
		"values.yaml":            "image: registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0\nreplicas: 1\ncollectors: [certificatesigningrequests, configmaps, cronjobs, daemonsets, deployments, endpoints, horizontalpodautoscalers, ingresses, jobs, leases, limitranges, mutatingwebhookconfigurations, namespaces, networkpolicies, nodes, persistentvolumeclaims, persistentvolumes, poddisruptionbudgets, pods, replicasets, replicationcontrollers, resourcequotas, secrets, services, statefulsets, storageclasses, validatingwebhookconfigurations, volumeattachments]\n",
		"templates/_helpers.tpl": subchartHelpers,
		"templates/all.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "sub.fullname" . }}
  labels:
{{- include "sub.labels" . | indent 4 }}
rules:
{{- range .Values.collectors }}
- apiGroups: ["", apps, batch, networking.k8s.io, policy, storage.k8s.io, autoscaling, coordination.k8s.io, certificates.k8s.io, admissionregistration.k8s.io]
  resources: [{{ . }}]
  verbs: [list, watch]
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "sub.fullname" . }}
  labels:
{{- include "sub.labels" . | indent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ include "sub.fullname" . }}
subjects:
- kind: ServiceAccount
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "sub.fullname" . }}-customresourcestate-config
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
data:
  config.yaml: |
    kind: CustomResourceStateMetrics
    spec:
      resources: []
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
spec:
  type: ClusterIP
  ports:
  - name: http
    protocol: TCP
    port: 8080
    targetPort: 8080
  selector:
{{- include "sub.selector" . | indent 4 }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
spec:
  selector:
    matchLabels:
{{- include "sub.selector" . | indent 6 }}
  replicas: {{ .Values.replicas }}
  revisionHistoryLimit: 10
  template:
    metadata:
      labels:
{{- include "sub.labels" . | indent 8 }}
    spec:
      serviceAccountName: {{ include "sub.fullname" . }}
      securityContext:
        fsGroup: 65534
        runAsGroup: 65534
        runAsNonRoot: true
        runAsUser: 65534
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: kube-state-metrics
        args:
        - --port=8080
        - --resources={{ join "," .Values.collectors }}
        image: {{ .Values.image }}
        ports:
        - containerPort: 8080
          name: http
        livenessProbe:
          httpGet: {path: /livez, port: 8080}
          initialDelaySeconds: 5
          timeoutSeconds: 5
        readinessProbe:
          httpGet: {path: /readyz, port: 8081}
          initialDelaySeconds: 5
          timeoutSeconds: 5
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities: {drop: [ALL]}
---
{{- include "sub.servicemonitor" . }}
`,
	}
}

func nodeExporterFiles() map[string]string {
	return map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: prometheus-node-exporter\nversion: 4.39.0\nappVersion: 1.8.2\n",
		"values.yaml":            "image: quay.io/prometheus/node-exporter:v1.8.2\nport: 9100\n",
		"templates/_helpers.tpl": subchartHelpers,
		"templates/all.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
    jobLabel: node-exporter
spec:
  type: ClusterIP
  ports:
  - port: {{ .Values.port }}
    targetPort: {{ .Values.port }}
    protocol: TCP
    name: http
  selector:
{{- include "sub.selector" . | indent 4 }}
---
# The real exporter runs with hostNetwork and a hostPort; here it does not, so that two
# releases on the sandbox's one fake node never wait for each other's port.
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
spec:
  selector:
    matchLabels:
{{- include "sub.selector" . | indent 6 }}
  revisionHistoryLimit: 10
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1}
  template:
    metadata:
      labels:
{{- include "sub.labels" . | indent 8 }}
      annotations:
        cluster-autoscaler.kubernetes.io/safe-to-evict: "true"
    spec:
      automountServiceAccountToken: false
      serviceAccountName: {{ include "sub.fullname" . }}
      securityContext:
        fsGroup: 65534
        runAsGroup: 65534
        runAsNonRoot: true
        runAsUser: 65534
      containers:
      - name: node-exporter
        image: {{ .Values.image }}
        args:
        - --path.procfs=/host/proc
        - --path.sysfs=/host/sys
        - --path.rootfs=/host/root
        - --web.listen-address=[$(HOST_IP)]:{{ .Values.port }}
        - --collector.filesystem.mount-points-exclude=^/(dev|proc|sys|var/lib/docker/.+|var/lib/kubelet/.+)($|/)
        env:
        - name: HOST_IP
          value: 0.0.0.0
        ports:
        - name: http
          containerPort: {{ .Values.port }}
          protocol: TCP
        livenessProbe:
          httpGet: {path: /, port: {{ .Values.port }}}
        readinessProbe:
          httpGet: {path: /, port: {{ .Values.port }}}
        volumeMounts:
        - {name: proc, mountPath: /host/proc, readOnly: true}
        - {name: sys, mountPath: /host/sys, readOnly: true}
      tolerations:
      - effect: NoSchedule
        operator: Exists
      volumes:
      - {name: proc, hostPath: {path: /proc}}
      - {name: sys, hostPath: {path: /sys}}
---
{{- include "sub.servicemonitor" . }}
`,
	}
}

func grafanaFiles() map[string]string {
	return map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: grafana\nversion: 8.5.1\nappVersion: 11.2.1\n",
		"values.yaml": `image: docker.io/grafana/grafana:11.2.1
replicas: 1
adminUser: admin
# adminPassword: a random one is generated when unset
grafana.ini:
  analytics: {check_for_updates: true}
  log: {mode: console}
  paths: {data: /var/lib/grafana/, logs: /var/log/grafana, plugins: /var/lib/grafana/plugins, provisioning: /etc/grafana/provisioning}
  server: {domain: ""}
`,
		"templates/_helpers.tpl": subchartHelpers,
		"templates/all.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
type: Opaque
data:
  admin-user: {{ .Values.adminUser | b64enc | quote }}
  {{- if .Values.adminPassword }}
  admin-password: {{ .Values.adminPassword | b64enc | quote }}
  {{- else }}
  admin-password: {{ randAlphaNum 40 | b64enc | quote }}
  {{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
data:
  grafana.ini: |
{{- range $key, $value := index .Values "grafana.ini" }}
    [{{ $key }}]
    {{- range $k, $v := $value }}
    {{ $k }} = {{ $v }}
    {{- end }}
{{- end }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "sub.fullname" . }}-config-dashboards
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
data:
  provider.yaml: |-
    apiVersion: 1
    providers:
    - name: sidecarProvider
      orgId: 1
      type: file
      disableDeletion: false
      allowUiUpdates: false
      updateIntervalSeconds: 30
      options:
        foldersFromFilesStructure: false
        path: /tmp/dashboards
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "sub.fullname" . }}-test
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
data:
  run.sh: |-
    @test "Test Health" {
      url="http://{{ include "sub.fullname" . }}/api/health"
      code=$(wget --server-response --spider --timeout 90 --tries 10 ${url} 2>&1 | awk '/^  HTTP/{print $2}')
      [ "$code" == "200" ]
    }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "sub.fullname" . }}-clusterrole
  labels:
{{- include "sub.labels" . | indent 4 }}
rules:
- apiGroups: [""]
  resources: [configmaps, secrets]
  verbs: [get, watch, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ include "sub.fullname" . }}-clusterrolebinding
  labels:
{{- include "sub.labels" . | indent 4 }}
subjects:
- kind: ServiceAccount
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
roleRef:
  kind: ClusterRole
  name: {{ include "sub.fullname" . }}-clusterrole
  apiGroup: rbac.authorization.k8s.io
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ include "sub.fullname" . }}
subjects:
- kind: ServiceAccount
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
spec:
  type: ClusterIP
  ports:
  - name: http
    port: 80
    protocol: TCP
    targetPort: 3000
  selector:
{{- include "sub.selector" . | indent 4 }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "sub.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
{{- include "sub.labels" . | indent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  revisionHistoryLimit: 10
  selector:
    matchLabels:
{{- include "sub.selector" . | indent 6 }}
  strategy:
    type: RollingUpdate
  template:
    metadata:
      labels:
{{- include "sub.labels" . | indent 8 }}
      annotations:
        checksum/config: {{ index .Values "grafana.ini" | toYaml | sha256sum }}
        checksum/secret: {{ .Values.adminUser | sha256sum }}
    spec:
      serviceAccountName: {{ include "sub.fullname" . }}
      automountServiceAccountToken: true
      securityContext:
        fsGroup: 472
        runAsGroup: 472
        runAsNonRoot: true
        runAsUser: 472
      containers:
      - name: grafana-sc-dashboard
        image: quay.io/kiwigrid/k8s-sidecar:1.27.4
        env:
        - {name: METHOD, value: WATCH}
        - {name: LABEL, value: grafana_dashboard}
        - {name: FOLDER, value: /tmp/dashboards}
        - {name: RESOURCE, value: both}
        volumeMounts:
        - {name: sc-dashboard-volume, mountPath: /tmp/dashboards}
      - name: grafana
        image: {{ .Values.image }}
        ports:
        - {name: grafana, containerPort: 3000, protocol: TCP}
        env:
        - name: GF_SECURITY_ADMIN_USER
          valueFrom: {secretKeyRef: {name: {{ include "sub.fullname" . }}, key: admin-user}}
        - name: GF_SECURITY_ADMIN_PASSWORD
          valueFrom: {secretKeyRef: {name: {{ include "sub.fullname" . }}, key: admin-password}}
        livenessProbe:
          failureThreshold: 10
          httpGet: {path: /api/health, port: 3000}
          initialDelaySeconds: 60
          timeoutSeconds: 30
        readinessProbe:
          httpGet: {path: /api/health, port: 3000}
        volumeMounts:
        - {name: config, mountPath: /etc/grafana/grafana.ini, subPath: grafana.ini}
        - {name: storage, mountPath: /var/lib/grafana}
        - {name: sc-dashboard-volume, mountPath: /tmp/dashboards}
        - {name: sc-dashboard-provider, mountPath: /etc/grafana/provisioning/dashboards/sc-dashboardproviders.yaml, subPath: provider.yaml}
      volumes:
      - name: config
        configMap: {name: {{ include "sub.fullname" . }}}
      - name: storage
        emptyDir: {}
      - name: sc-dashboard-volume
        emptyDir: {}
      - name: sc-dashboard-provider
        configMap: {name: {{ include "sub.fullname" . }}-config-dashboards}
---
{{- include "sub.servicemonitor" . }}
`,
	}
}
