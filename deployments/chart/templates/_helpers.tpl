{{- define "sealane.name" -}}{{ .Release.Name | trunc 40 | trimSuffix "-" }}{{- end -}}

{{- define "sealane.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end -}}

{{- define "sealane.labels" -}}
app.kubernetes.io/part-of: sealane
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The NATS client URL of the chart's NATS cluster. */}}
{{- define "sealane.natsURL" -}}nats://{{ include "sealane.name" . }}-nats.{{ .Release.Namespace }}.svc:4222{{- end -}}

{{/* Cluster-scoped names carry the namespace: one cluster may hold several installations. */}}
{{- define "sealane.clusterScopedName" -}}{{ .Release.Namespace }}-{{ include "sealane.name" . }}{{- end -}}

{{/* The NATS permissions variable of a regional pool's stage: (list stage pool) → APPLIER_POOL_EU. */}}
{{- define "sealane.poolPermissions" -}}{{ upper (index . 0) }}_POOL_{{ upper (index . 1) | replace "-" "_" }}{{- end -}}
