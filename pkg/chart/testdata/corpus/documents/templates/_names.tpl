{{- define "tenant.ns" -}}{{ .Values.tenant }}-{{ .Release.Name }}{{- end -}}
{{- define "tenant.labels" -}}
tenant: {{ .Values.tenant }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}
