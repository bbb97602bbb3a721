package podrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

const render = `
apiVersion: v1
kind: Secret
metadata: {name: pw}
data: {renderer: c2VjcmV0}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {nats.conf: "store_dir: /data"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: nats}
spec:
  template:
    spec:
      containers:
      - name: nats
        image: nats:2
        args: ["-c", "/etc/nats/nats.conf", "--store=/data"]
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: PW, valueFrom: {secretKeyRef: {name: pw, key: renderer}}}
        - {name: PLAIN, value: x}
        volumeMounts:
        - {name: config, mountPath: /etc/nats}
        - {name: data, mountPath: /data}
      volumes:
      - {name: config, configMap: {name: conf}}
`

func TestContainerAsProcess(t *testing.T) {
	objs, err := Parse(render)
	if err != nil {
		t.Fatal(err)
	}
	sts := objs.StatefulSets["nats"]
	root := t.TempDir()
	p, err := objs.Container(sts.Spec.Template.Spec, sts.Spec.Template.Spec.Containers[0],
		Pod{Name: "nats-1", Namespace: "ns", Root: root, Binaries: map[string]string{"nats:2": "/bin/nats-server"}})
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(root, "etc", "nats")
	if p.Path != "/bin/nats-server" || strings.Join(p.Args, " ") != "-c "+conf+"/nats.conf --store="+filepath.Join(root, "data") {
		t.Errorf("process = %s %v", p.Path, p.Args)
	}
	if got := strings.Join(p.Env, " "); got != "POD_NAME=nats-1 PW=secret PLAIN=x" {
		t.Errorf("env = %s", got)
	}
	if b, err := os.ReadFile(filepath.Join(conf, "nats.conf")); err != nil || string(b) != "store_dir: /data" {
		t.Errorf("mounted config = %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(root, "data")); err != nil || !fi.IsDir() {
		t.Errorf("claim mount: %v", err)
	}

	spec := sts.Spec.Template.Spec
	spec.Containers[0].Env = append(spec.Containers[0].Env, corev1EnvSecret("MISSING", "pw", "nope"))
	if _, err := objs.Container(spec, spec.Containers[0], Pod{Name: "x", Root: t.TempDir(), Binaries: map[string]string{"nats:2": "b"}}); err == nil || !strings.Contains(err.Error(), `no key "nope" in Secret pw`) {
		t.Errorf("missing Secret key: err = %v", err)
	}
	if _, err := objs.Container(spec, spec.Containers[0], Pod{Name: "x", Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no local binary") {
		t.Errorf("no binary: err = %v", err)
	}
}

func corev1EnvSecret(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}
