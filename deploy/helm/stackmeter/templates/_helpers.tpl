{{/* The objects' name: the release's, with -stackmeter unless it says so. */}}
{{- define "stackmeter.fullname" -}}
{{- if contains "stackmeter" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-stackmeter" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* What selects the agents' pods (never changes across upgrades). */}}
{{- define "stackmeter.selector" -}}
app.kubernetes.io/name: stackmeter
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "stackmeter.labels" -}}
{{ include "stackmeter.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end -}}

{{/* The Secret holding the shared secret, if any. */}}
{{- define "stackmeter.secretName" -}}
{{- if .Values.secret.existingSecret -}}
{{- .Values.secret.existingSecret -}}
{{- else if .Values.secret.value -}}
{{- printf "%s-secret" (include "stackmeter.fullname" .) -}}
{{- end -}}
{{- end -}}
