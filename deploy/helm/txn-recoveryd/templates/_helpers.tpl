{{/* The name of every object of the release: fullnameOverride, or the release's name. */}}
{{- define "txn-recoveryd.name" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "txn-recoveryd.selectorLabels" -}}
app.kubernetes.io/name: txn-recoveryd
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "txn-recoveryd.labels" -}}
{{ include "txn-recoveryd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The pods' ServiceAccount: the chart's (named after the release), or an existing one. */}}
{{- define "txn-recoveryd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "txn-recoveryd.name" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The pods' securityContext: the values' user, group and fsGroup, each left to the
platform when null (podSecurityContext in values.yaml). `fsGroup: false` leaves it out
(the test pod mounts nothing). */}}
{{- define "txn-recoveryd.podSecurityContext" -}}
runAsNonRoot: true
{{- with .Values.podSecurityContext }}
{{- if not (kindIs "invalid" .runAsUser) }}
runAsUser: {{ .runAsUser }}
{{- end }}
{{- if not (kindIs "invalid" .runAsGroup) }}
runAsGroup: {{ .runAsGroup }}
{{- end }}
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The web configuration's Secret: existingSecret, or the one the chart makes. */}}
{{- define "txn-recoveryd.webConfigSecret" -}}
{{- if .Values.webConfig.existingSecret -}}
{{- .Values.webConfig.existingSecret -}}
{{- else -}}
{{- include "txn-recoveryd.name" . }}-web
{{- end -}}
{{- end -}}

{{/* The scheme the endpoint speaks. */}}
{{- define "txn-recoveryd.scheme" -}}
{{- if and .Values.webConfig.enabled .Values.webConfig.tls -}}HTTPS{{- else -}}HTTP{{- end -}}
{{- end -}}

{{/*
Whole numbers written as integers, in place, through maps and lists at any depth. A values
file reaches the templates with every number as a float64, and toToml writes 8 as "8.0",
which the daemon refuses for an integer key ("sweep.workers: must be an integer", exit 78).
A whole float becomes an int64; any other number stays as it is (daemon.jitter = 0.2). The
only key of the configuration that takes a fraction accepts an integer too. Takes a map.
*/}}
{{- define "txn-recoveryd.wholeNumbers" -}}
{{- $map := . -}}
{{- range $key, $value := $map -}}
{{- if kindIs "float64" $value -}}
{{- if eq $value (float64 (int64 $value)) -}}
{{- $_ := set $map $key (int64 $value) -}}
{{- end -}}
{{- else if kindIs "map" $value -}}
{{- include "txn-recoveryd.wholeNumbers" $value -}}
{{- else if kindIs "slice" $value -}}
{{- $items := list -}}
{{- range $item := $value -}}
{{- $holder := dict "item" $item -}}
{{- include "txn-recoveryd.wholeNumbers" $holder -}}
{{- $items = append $items $holder.item -}}
{{- end -}}
{{- $_ := set $map $key $items -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The configuration file: the values' config with the keys the chart decides. */}}
{{- define "txn-recoveryd.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- $mongodb := get $config "mongodb" | default dict -}}
{{- $_ := set $mongodb "uri_file" "/var/run/secrets/txn-recoveryd/mongodb-uri" -}}
{{- $_ := set $config "mongodb" $mongodb -}}
{{- $http := get $config "http" | default dict -}}
{{- $_ := set $http "listen" (printf "0.0.0.0:%d" (int .Values.port)) -}}
{{- $_ := set $config "http" $http -}}
{{- $log := get $config "log" | default dict -}}
{{- $_ := set $log "format" "json" -}}
{{- $_ := set $config "log" $log -}}
{{- include "txn-recoveryd.wholeNumbers" $config -}}
{{- toToml $config -}}
{{- end -}}
