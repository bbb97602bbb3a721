// Package realcharts writes charts with the shape of widely used public charts — generated
// here, not copied — for the benchmarks and tests that must see what real users deploy: large
// CRDs in a subchart's crds/ directory, hooks with their own RBAC, custom resources, large
// ConfigMaps, a random-named test hook.
package realcharts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteMonitoringStack writes the monitoring stack chart (see MonitoringStack) into dir, which
// must not exist or be empty, and returns dir. `--set gen=N` changes one Deployment's pod
// template (the operator's); every other object stays the same.
func WriteMonitoringStack(dir string) (string, error) {
	return WriteMonitoringStackInGroup(dir, MonitoringGroup)
}

// WriteMonitoringStackInGroup is WriteMonitoringStack with the custom resources' API group
// (MonitoringGroup) replaced by group: a test's own CRDs, which no other test shares.
func WriteMonitoringStackInGroup(dir, group string) (string, error) {
	files := monitoringFiles()
	if group != MonitoringGroup {
		for name, content := range files {
			files[name] = strings.ReplaceAll(content, MonitoringGroup, group)
		}
	}
	return dir, writeFiles(dir, files)
}

// SmallApp is the shape of the chart WriteSmallApp writes.
const SmallApp = "a Deployment and a Service, plus a test hook Pod whose name is random (every render differs)"

// WriteSmallApp writes a small application chart into dir: a Deployment and a Service, and a
// test hook Pod named with randAlphaNum as many charts name theirs, so every deploy renders a
// new manifest and makes a new revision while nothing changes in the cluster. `--set gen=N`
// changes the Deployment's pod template.
func WriteSmallApp(dir string) (string, error) {
	return dir, writeFiles(dir, map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: webapp\nversion: 1.4.2\nappVersion: \"2.1.0\"\n",
		"values.yaml": "gen: 1\nimage: registry.example.com/webapp:2.1.0\nreplicas: 1\nport: 8080\n",
		"templates/app.yaml": `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}-webapp
  labels: {app.kubernetes.io/name: webapp, app.kubernetes.io/instance: {{ .Release.Name }}}
spec:
  type: ClusterIP
  ports: [{port: 80, targetPort: http, name: http}]
  selector: {app.kubernetes.io/name: webapp, app.kubernetes.io/instance: {{ .Release.Name }}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}-webapp
  labels: {app.kubernetes.io/name: webapp, app.kubernetes.io/instance: {{ .Release.Name }}}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app.kubernetes.io/name: webapp, app.kubernetes.io/instance: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: webapp, app.kubernetes.io/instance: {{ .Release.Name }}}
      annotations: {gen: {{ .Values.gen | quote }}}
    spec:
      containers:
      - name: webapp
        image: {{ .Values.image }}
        ports: [{name: http, containerPort: {{ .Values.port }}}]
        readinessProbe: {httpGet: {path: /healthz, port: http}}
`,
		"templates/tests/test-connection.yaml": `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-webapp-test-{{ randAlphaNum 5 | lower }}
  annotations:
    helm.sh/hook: test
spec:
  restartPolicy: Never
  containers:
  - name: wget
    image: busybox:1.36
    command: [wget]
    args: ['{{ .Release.Name }}-webapp:80']
`,
	})
}

func writeFiles(dir string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("write chart %s: %w", dir, err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write chart %s: %w", dir, err)
		}
	}
	return nil
}
