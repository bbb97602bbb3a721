{{- define "ordering.pod" -}}
containers:
  - name: app
    image: nginx:1.27
{{- end }}
