{{- define "tpl.name" -}}
{{ .Release.Name }}-{{ .Chart.Name }}
{{- end -}}
{{- define "tpl.labels" -}}
{{ tpl (toYaml .Values.labels) . }}
{{- end -}}
