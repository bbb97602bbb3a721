// Package podrun turns the containers of rendered Kubernetes manifests into local processes, so
// that a test can run a chart's services exactly as the chart configures them: the command,
// arguments and environment of each container (Secret, ConfigMap and field references
// resolved from the same render), with its ConfigMap, Secret and emptyDir mounts as temporary
// directories.
package podrun

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Objects are the rendered manifests a pod may refer to, and the workloads to run.
type Objects struct {
	Deployments  map[string]*appsv1.Deployment
	StatefulSets map[string]*appsv1.StatefulSet
	secrets      map[string]map[string][]byte
	configMaps   map[string]map[string]string
}

// Parse reads a multi-document YAML render (helm template, sealane render).
func Parse(manifests string) (*Objects, error) {
	o := &Objects{Deployments: map[string]*appsv1.Deployment{}, StatefulSets: map[string]*appsv1.StatefulSet{},
		secrets: map[string]map[string][]byte{}, configMaps: map[string]map[string]string{}}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				return o, nil
			}
			return nil, fmt.Errorf("parse the render: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := o.add(&u); err != nil {
			return nil, fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}

func (o *Objects) add(u *unstructured.Unstructured) error {
	conv := runtime.DefaultUnstructuredConverter
	switch u.GetKind() {
	case "Deployment":
		var d appsv1.Deployment
		if err := conv.FromUnstructured(u.Object, &d); err != nil {
			return err
		}
		o.Deployments[d.Name] = &d
	case "StatefulSet":
		var s appsv1.StatefulSet
		if err := conv.FromUnstructured(u.Object, &s); err != nil {
			return err
		}
		o.StatefulSets[s.Name] = &s
	case "Secret":
		var s corev1.Secret
		if err := conv.FromUnstructured(u.Object, &s); err != nil {
			return err
		}
		data := map[string][]byte{}
		for k, v := range s.Data {
			data[k] = v
		}
		for k, v := range s.StringData {
			data[k] = []byte(v)
		}
		o.secrets[s.Name] = data
	case "ConfigMap":
		var c corev1.ConfigMap
		if err := conv.FromUnstructured(u.Object, &c); err != nil {
			return err
		}
		o.configMaps[c.Name] = c.Data
	}
	return nil
}

// Proc is one container as a local process.
type Proc struct {
	Name string   // <pod>/<container>
	Path string   // the local binary
	Args []string // command[1:] + args, mount paths mapped to local directories
	Env  []string // KEY=value, resolved
	Root string   // where the pod's mounts live
}

// Pod says what Kubernetes would provide a container, on this machine.
type Pod struct {
	Name, Namespace string
	// Binaries maps a container's command[0] (or, without a command, its image) to a local binary.
	Binaries map[string]string
	// Root is an empty directory for the pod's mounts (a mount at /etc/x is Root/etc/x).
	Root string
}

// Container returns container c of spec as a process of pod p.
func (o *Objects) Container(spec corev1.PodSpec, c corev1.Container, p Pod) (Proc, error) {
	proc := Proc{Name: p.Name + "/" + c.Name, Root: p.Root}
	argv := append(append([]string{}, c.Command...), c.Args...)
	key := c.Image
	if len(c.Command) > 0 {
		key, argv = c.Command[0], argv[1:]
	}
	bin, ok := p.Binaries[key]
	if !ok {
		return proc, fmt.Errorf("%s: no local binary for %q", proc.Name, key)
	}
	proc.Path = bin
	mounts, err := o.mount(spec, c, p)
	if err != nil {
		return proc, fmt.Errorf("%s: %w", proc.Name, err)
	}
	for _, a := range argv {
		proc.Args = append(proc.Args, mounts.mapPath(a))
	}
	for _, e := range c.Env {
		v, err := o.envValue(e, p)
		if err != nil {
			return proc, fmt.Errorf("%s: env %s: %w", proc.Name, e.Name, err)
		}
		proc.Env = append(proc.Env, e.Name+"="+mounts.mapPath(v))
	}
	if tmp, ok := mounts["/tmp"]; ok {
		proc.Env = append(proc.Env, "TMPDIR="+tmp)
	}
	return proc, nil
}

func (o *Objects) envValue(e corev1.EnvVar, p Pod) (string, error) {
	switch f := e.ValueFrom; {
	case f == nil:
		return e.Value, nil
	case f.SecretKeyRef != nil:
		v, ok := o.secrets[f.SecretKeyRef.Name][f.SecretKeyRef.Key]
		if !ok {
			return "", fmt.Errorf("no key %q in Secret %s of the render", f.SecretKeyRef.Key, f.SecretKeyRef.Name)
		}
		return string(v), nil
	case f.ConfigMapKeyRef != nil:
		v, ok := o.configMaps[f.ConfigMapKeyRef.Name][f.ConfigMapKeyRef.Key]
		if !ok {
			return "", fmt.Errorf("no key %q in ConfigMap %s of the render", f.ConfigMapKeyRef.Key, f.ConfigMapKeyRef.Name)
		}
		return v, nil
	case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.name":
		return p.Name, nil
	case f.FieldRef != nil && f.FieldRef.FieldPath == "metadata.namespace":
		return p.Namespace, nil
	}
	return "", fmt.Errorf("unsupported valueFrom %+v", e.ValueFrom)
}

// mounts maps a container's mount paths to local directories.
type mounts map[string]string // mount path → local path

// mapPath replaces a mount path at the start of s (or after '=') by its local directory.
func (m mounts) mapPath(s string) string {
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, p := range paths {
		for _, prefix := range []string{"", "="} {
			if i := strings.Index(s, prefix+p); i >= 0 && (prefix != "" || i == 0) {
				return s[:i+len(prefix)] + m[p] + s[i+len(prefix)+len(p):]
			}
		}
	}
	return s
}

// mount materialises the container's volume mounts under p.Root: ConfigMap and Secret
// volumes as files, emptyDir and claims as empty directories.
func (o *Objects) mount(spec corev1.PodSpec, c corev1.Container, p Pod) (mounts, error) {
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	m := mounts{}
	for _, vm := range c.VolumeMounts {
		local := filepath.Join(p.Root, filepath.FromSlash(vm.MountPath))
		if err := os.MkdirAll(local, 0o700); err != nil {
			return nil, err
		}
		m[vm.MountPath] = local
		v, ok := vols[vm.Name]
		if !ok {
			continue // a volume claim template: an empty directory
		}
		files, err := o.volumeFiles(v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(local, name), data, 0o600); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (o *Objects) volumeFiles(v corev1.Volume) (map[string][]byte, error) {
	files := map[string][]byte{}
	switch {
	case v.ConfigMap != nil:
		data, ok := o.configMaps[v.ConfigMap.Name]
		if !ok {
			return nil, fmt.Errorf("no ConfigMap %s in the render", v.ConfigMap.Name)
		}
		for k, s := range data {
			files[k] = []byte(s)
		}
	case v.Secret != nil:
		data, ok := o.secrets[v.Secret.SecretName]
		if !ok {
			return nil, fmt.Errorf("no Secret %s in the render", v.Secret.SecretName)
		}
		for k, b := range data {
			files[k] = b
		}
	}
	return files, nil
}

// Secret returns key of the rendered Secret name ("" when absent).
func (o *Objects) Secret(name, key string) string { return string(o.secrets[name][key]) }
