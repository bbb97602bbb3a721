worker_processes {{ .Values.nginx.workers }};
upstream api {
{{- range .Values.nginx.upstreams }}
  server {{ . }}.{{ $.Release.Namespace }}.svc:8080;
{{- end }}
}
server {
  server_name {{ tpl .Values.host . }};
}
