{{/* vim: set filetype=mustache: */}}

{{/*
Create a default fully qualified app name for PostgreSQL Primary objects
*/}}
{{- define "postgresql.v1.primary.fullname" -}}
{{- if eq .Values.architecture "replication" -}}
    {{- printf "%s-%s" (include "common.names.fullname" .) .Values.primary.name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
    {{- include "common.names.fullname" . -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.readReplica.fullname" -}}
{{- printf "%s-%s" (include "common.names.fullname" .) .Values.readReplicas.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "postgresql.v1.primary.svc.headless" -}}
{{- printf "%s-hl" (include "postgresql.v1.primary.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "postgresql.v1.image" -}}
{{ include "common.images.image" (dict "imageRoot" .Values.image "global" .Values.global) }}
{{- end -}}

{{- define "postgresql.v1.metrics.image" -}}
{{ include "common.images.image" (dict "imageRoot" .Values.metrics.image "global" .Values.global) }}
{{- end -}}

{{- define "postgresql.v1.imagePullSecrets" -}}
{{ include "common.images.renderPullSecrets" (dict "images" (list .Values.image .Values.metrics.image) "context" $) }}
{{- end -}}

{{/*
Return the name for a custom user to create
*/}}
{{- define "postgresql.v1.username" -}}
{{- if .Values.global.postgresql.auth.username -}}
    {{- .Values.global.postgresql.auth.username -}}
{{- else -}}
    {{- .Values.auth.username -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.database" -}}
{{- $customDatabase := default .Values.auth.database .Values.global.postgresql.auth.database -}}
{{- if $customDatabase -}}
{{- $customDatabase -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.secretName" -}}
{{- if .Values.auth.existingSecret -}}
    {{- printf "%s" (tpl .Values.auth.existingSecret $) -}}
{{- else -}}
    {{- printf "%s" (include "common.names.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
    {{ default (include "common.names.fullname" .) .Values.serviceAccount.name }}
{{- else -}}
    {{ default "default" .Values.serviceAccount.name }}
{{- end -}}
{{- end -}}

{{/*
Return true if a configmap object should be created for PostgreSQL primary with the configuration
*/}}
{{- define "postgresql.v1.primary.createConfigmap" -}}
{{- if .Values.primary.configuration }}
    {{- true -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.primary.createExtendedConfigmap" -}}
{{- if .Values.primary.extendedConfiguration }}
    {{- true -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.createInitdbScriptsConfigmap" -}}
{{- if or (.Files.Glob "files/docker-entrypoint-initdb.d/*.{sh,sql,sql.gz}") .Values.primary.initdb.scripts }}
    {{- true -}}
{{- end -}}
{{- end -}}

{{/*
Compile all warnings into a single message, and call fail.
*/}}
{{- define "postgresql.v1.validateValues" -}}
{{- $messages := list -}}
{{- $messages = append $messages (include "postgresql.v1.validateValues.architecture" .) -}}
{{- $messages = without $messages "" -}}
{{- $message := join "\n" $messages -}}
{{- if $message -}}
{{-   printf "\nVALUES VALIDATION:\n%s" $message | fail -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.validateValues.architecture" -}}
{{- if not (has .Values.architecture (list "standalone" "replication")) -}}
postgresql: architecture
    Invalid architecture selected. Valid values are "standalone" and "replication".
{{- end -}}
{{- end -}}

{{/*
A password: the one from the values, else one derived from the release (a stand-in
for the random one the real chart generates, which would not be reproducible).
*/}}
{{- define "postgresql.v1.password" -}}
{{- $secret := lookup "v1" "Secret" (include "common.names.namespace" .context) (include "postgresql.v1.secretName" .context) -}}
{{- if and $secret (hasKey $secret.data .key) -}}
{{- index $secret.data .key | b64dec -}}
{{- else if .value -}}
{{- .value -}}
{{- else if .required -}}
{{- required (printf "PASSWORDS ERROR: %s is required" .path) .value -}}
{{- else -}}
{{- printf "%s/%s/%s" .context.Release.Namespace .context.Release.Name .key | sha256sum | trunc 16 -}}
{{- end -}}
{{- end -}}

{{- define "postgresql.v1.service.port" -}}
{{- .Values.primary.service.ports.postgresql -}}
{{- end -}}
