{{- define "api.image" -}}
{{ .Values.global.imageRegistry }}/{{ .Values.image.repository }}:{{ .Chart.AppVersion }}
{{- end -}}
