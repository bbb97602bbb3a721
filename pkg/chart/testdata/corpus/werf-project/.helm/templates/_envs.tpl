{{- define "billing.env" -}}
{{- $root := index . 0 -}}
{{- $values := index . 1 -}}
{{- pluck $root.Values.global.env $values | first | default $values._default -}}
{{- end -}}

{{- define "billing.envs" -}}
{{- range $name, $values := .Values.envs }}
- name: {{ $name }}
  value: {{ include "billing.env" (list $ $values) | quote }}
{{- end }}
- name: WERF_ENV
  value: {{ .Values.werf.env | quote }}
{{- end -}}

{{- define "billing.resources" -}}
{{- $r := pluck .Values.global.env .Values.app.resources | first | default .Values.app.resources._default -}}
{{- toYaml $r -}}
{{- end -}}
