{{/* Names, labels and the pieces every pagemill pod shares. */}}

{{- define "pagemill.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pagemill.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "pagemill.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "pagemill.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels of one component: (dict "root" $ "component" "gateway") */}}
{{- define "pagemill.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: pagemill
{{ include "pagemill.selectorLabels" . }}
{{- end -}}

{{- define "pagemill.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pagemill.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "pagemill.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "pagemill.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "pagemill.secretName" -}}
{{- default (printf "%s-secrets" (include "pagemill.fullname" .)) .Values.secrets.existingSecret -}}
{{- end -}}

{{/* An image of ours: (dict "root" $ "name" .Values.image.worker) */}}
{{- define "pagemill.image" -}}
{{- printf "%s/%s:%s" .root.Values.image.registry .name (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- end -}}

{{/* Settings: the ConfigMap and the Secret, plus the multiprocess metrics folder. */}}
{{- define "pagemill.envFrom" -}}
envFrom:
  - configMapRef:
      name: {{ include "pagemill.fullname" . }}-config
  - secretRef:
      name: {{ include "pagemill.secretName" . }}
{{- end -}}

{{- define "pagemill.baseEnv" -}}
- name: PROMETHEUS_MULTIPROC_DIR
  value: /tmp/metrics
- name: PAGEMILL_DATA_DIR
  value: /tmp/pagemill
{{- end -}}

{{/* Pods restart when the configuration changes. */}}
{{- define "pagemill.podAnnotations" -}}
checksum/config: {{ .Values.config | toYaml | sha256sum }}
checksum/secrets: {{ .Values.secrets | toYaml | sha256sum }}
{{- end -}}

{{/* Writable scratch for a read-only root filesystem: /tmp (metrics files, rendering). */}}
{{- define "pagemill.tmpVolume" -}}
- name: tmp
  emptyDir: {}
{{- end -}}

{{- define "pagemill.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* The shared pod spec fields: (dict "root" $ "component" .Values.gateway) */}}
{{- define "pagemill.podPlacement" -}}
{{- with .component.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A worker's arguments: (dict "worker" .Values.cpuWorker) */}}
{{- define "pagemill.workerArgs" -}}
- pagemill
- worker
- --queues
- {{ join "," .worker.queues | quote }}
- --pool
- {{ .worker.pool | quote }}
- --concurrency
- {{ .worker.concurrency | quote }}
- --metrics-port
- {{ .worker.metricsPort | quote }}
{{- end -}}

{{/* A Celery worker Deployment and its metrics Service: (dict "root" $ "component" "worker-cpu" "worker" .Values.cpuWorker "image" .Values.image.worker) */}}
{{- define "pagemill.workerDeployment" -}}
{{- $root := .root }}
{{- $fullname := include "pagemill.fullname" $root }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $fullname }}-{{ .component }}
  labels:
    {{- include "pagemill.labels" (dict "root" $root "component" .component) | nindent 4 }}
spec:
  {{- if not (and .worker.keda .worker.keda.enabled) }}
  replicas: {{ .worker.replicas }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "pagemill.selectorLabels" (dict "root" $root "component" .component) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "pagemill.labels" (dict "root" $root "component" .component) | nindent 8 }}
      annotations:
        {{- include "pagemill.podAnnotations" $root | nindent 8 }}
    spec:
      serviceAccountName: {{ include "pagemill.serviceAccountName" $root }}
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      # A warm shutdown lets running pages finish (page_timeout_s plus a margin).
      terminationGracePeriodSeconds: 330
      containers:
        - name: worker
          image: {{ include "pagemill.image" (dict "root" $root "name" .image) }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args:
            {{- include "pagemill.workerArgs" (dict "worker" .worker) | nindent 12 }}
          ports:
            - name: metrics
              containerPort: {{ .worker.metricsPort }}
          {{- include "pagemill.envFrom" $root | nindent 10 }}
          env:
            {{- include "pagemill.baseEnv" $root | nindent 12 }}
            {{- with .worker.env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          livenessProbe:
            httpGet: {path: /metrics, port: metrics}
            initialDelaySeconds: 30
            periodSeconds: 30
            failureThreshold: 4
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          resources:
            {{- toYaml .worker.resources | nindent 12 }}
          volumeMounts:
            {{- include "pagemill.tmpMount" $root | nindent 12 }}
      volumes:
        {{- include "pagemill.tmpVolume" $root | nindent 8 }}
      {{- include "pagemill.podPlacement" (dict "root" $root "component" .worker) | nindent 6 }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $fullname }}-{{ .component }}-metrics
  labels:
    {{- include "pagemill.labels" (dict "root" $root "component" .component) | nindent 4 }}
    pagemill.io/metrics: "true"
spec:
  clusterIP: None
  selector:
    {{- include "pagemill.selectorLabels" (dict "root" $root "component" .component) | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .worker.metricsPort }}
      targetPort: metrics
{{- if .worker.pdb.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $fullname }}-{{ .component }}
  labels:
    {{- include "pagemill.labels" (dict "root" $root "component" .component) | nindent 4 }}
spec:
  maxUnavailable: {{ .worker.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "pagemill.selectorLabels" (dict "root" $root "component" .component) | nindent 6 }}
{{- end }}
{{- end -}}

{{/* KEDA scaling a worker on its Redis list: (dict "root" $ "component" "worker-gpu" "worker" .Values.gpuWorker "queue" "pages.gpu") */}}
{{- define "pagemill.scaledObject" -}}
{{- $root := .root }}
{{- $fullname := include "pagemill.fullname" $root }}
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ $fullname }}-{{ .component }}
  labels:
    {{- include "pagemill.labels" (dict "root" $root "component" .component) | nindent 4 }}
spec:
  scaleTargetRef:
    name: {{ $fullname }}-{{ .component }}
  minReplicaCount: {{ .worker.keda.minReplicas }}
  maxReplicaCount: {{ .worker.keda.maxReplicas }}
  pollingInterval: {{ .worker.keda.pollingInterval }}
  cooldownPeriod: {{ .worker.keda.cooldownPeriod }}
  triggers:
    - type: redis
      metadata:
        address: {{ required "keda.redis.address (host:port) is required when KEDA scales workers" $root.Values.keda.redis.address | quote }}
        listName: {{ .queue | quote }}
        listLength: {{ .worker.keda.listLength | quote }}
        activationListLength: {{ .worker.keda.activationListLength | quote }}
        databaseIndex: {{ $root.Values.keda.redis.databaseIndex | quote }}
        enableTLS: {{ $root.Values.keda.redis.enableTLS | quote }}
      {{- if $root.Values.secrets.redisPassword }}
      authenticationRef:
        name: {{ $fullname }}-redis
      {{- end }}
{{- end -}}
