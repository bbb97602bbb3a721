{{- define "addons.name" -}}addons{{- end -}}
