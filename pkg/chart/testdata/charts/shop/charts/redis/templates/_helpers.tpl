{{- define "redis.fullname" -}}
{{- printf "%s-redis" .Release.Name -}}
{{- end -}}
