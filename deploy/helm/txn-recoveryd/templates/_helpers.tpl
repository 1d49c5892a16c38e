{{- define "txn-recoveryd.name" -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
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
{{- toToml $config -}}
{{- end -}}
