{{- define "keycloak.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
Reuse the password of an existing secret, as charts do with lookup: helm template
has no cluster, lookup returns an empty map, and the password from the values is used.
*/}}
{{- define "keycloak.adminPassword" -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "keycloak.fullname" .) -}}
{{- if $secret -}}
{{- index $secret.data "admin-password" -}}
{{- else -}}
{{- required "auth.adminPassword is required: set it with --set auth.adminPassword=..." .Values.auth.adminPassword | b64enc -}}
{{- end -}}
{{- end -}}
