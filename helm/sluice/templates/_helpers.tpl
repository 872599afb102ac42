{{/*
Names, labels and image references every template shares. templates/rbac.yaml is generated
(build/bin/sluice-chart-rbac) and relies on sluice.operatorName, sluice.serviceAccountName and
sluice.labels: keep their names.
*/}}

{{/*
The release's base name: the release name when it starts with "sluice" (release "sluice" makes
"sluice-operator", as `sluice up` names it), else "<release>-sluice". At most 54 characters, so
that "-operator" still fits in 63.
*/}}
{{- define "sluice.fullname" -}}
{{- $name := .Release.Name -}}
{{- if not (hasPrefix "sluice" $name) -}}
{{- $name = printf "%s-sluice" $name -}}
{{- end -}}
{{- $name | trunc 54 | trimSuffix "-" -}}
{{- end -}}

{{/* The operator's Deployment, ClusterRole or Roles, bindings and Lease. */}}
{{- define "sluice.operatorName" -}}
{{- printf "%s-operator" (include "sluice.fullname" .) -}}
{{- end -}}

{{- define "sluice.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "sluice.operatorName" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* Selects the operator's pods; never changes across upgrades (a Deployment's selector is
immutable). */}}
{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: sluice
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* The recommended labels, on every object of the chart. */}}
{{- define "sluice.labels" -}}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/part-of: sluice
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
One component's image reference, [registry/]repository[:tag][@digest], from a dict with "root"
(the top context) and "image" (one entry of .Values.images). The tag stays beside a digest: the
runtime pulls by digest, people read the tag.
*/}}
{{- define "sluice.image" -}}
{{- $image := .image -}}
{{- $registry := $image.registry | default .root.Values.imageRegistry -}}
{{- $ref := $image.repository -}}
{{- if $registry -}}
{{- $ref = printf "%s/%s" (trimSuffix "/" $registry) $ref -}}
{{- end -}}
{{- $ref = printf "%s:%s" $ref ($image.tag | default .root.Chart.AppVersion) -}}
{{- if $image.digest -}}
{{- $ref = printf "%s@%s" $ref $image.digest -}}
{{- end -}}
{{- $ref -}}
{{- end -}}

{{/* Combinations the schema cannot express; each fails the render with the values named. */}}
{{- define "sluice.validate" -}}
{{- if and (not .Values.operator.leaderElection.enabled) (gt (int .Values.operator.replicas) 1) -}}
{{- fail "operator.replicas: more than 1 needs operator.leaderElection.enabled (without it every replica would reconcile)" -}}
{{- end -}}
{{- if eq (int .Values.operator.metricsPort) (int .Values.operator.healthPort) -}}
{{- fail "operator.metricsPort and operator.healthPort must differ" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled (the ServiceMonitor selects that Service)" -}}
{{- end -}}
{{- if and (not .Values.serviceAccount.create) .Values.rbac.create (not .Values.serviceAccount.name) -}}
{{- fail "serviceAccount.name: required with serviceAccount.create=false and rbac.create=true (the RBAC would bind the namespace's default ServiceAccount)" -}}
{{- end -}}
{{- end -}}
