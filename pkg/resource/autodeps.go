package resource

import "fmt"

const rbacGroup = "rbac.authorization.k8s.io"

// podSpecPath is where each workload kind keeps its pod spec.
var podSpecPath = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// workloadGroups are the API groups the kinds of podSpecPath live in.
var workloadGroups = map[string]bool{"": true, "apps": true, "batch": true, "extensions": true}

// autoDependencies finds the objects key's object needs to exist first: what its pod template
// uses (ConfigMaps, Secrets, the ServiceAccount, PersistentVolumeClaims), or what a RoleBinding
// or ClusterRoleBinding binds. References marked optional are skipped, as werf does.
func autoDependencies(key Key, obj map[string]any) []AutoDependency {
	var c autoCollector
	if path, ok := podSpecPath[key.Kind]; ok && workloadGroups[key.Group] {
		if spec := nestedMap(obj, path...); spec != nil {
			c.podSpec(key.Namespace, spec)
		}
	}
	if key.Group == rbacGroup && (key.Kind == "RoleBinding" || key.Kind == "ClusterRoleBinding") {
		c.binding(key, obj)
	}
	return c.deps
}

type autoCollector struct {
	deps []AutoDependency
}

// add records target once (objects reference a handful of others, so a scan is cheap).
func (c *autoCollector) add(target Key, via string) {
	if target.Name == "" {
		return
	}
	for _, d := range c.deps {
		if d.Target == target {
			return
		}
	}
	c.deps = append(c.deps, AutoDependency{Target: target, Via: via})
}

func (c *autoCollector) podSpec(ns string, spec map[string]any) {
	core := func(kind, name string) Key { return Key{Kind: kind, Namespace: ns, Name: name} }
	sa := str(spec, "serviceAccountName")
	if sa == "" {
		sa = str(spec, "serviceAccount")
	}
	c.add(core("ServiceAccount", sa), "serviceAccountName")
	for _, s := range maps(spec["imagePullSecrets"]) {
		c.add(core("Secret", str(s, "name")), "imagePullSecrets")
	}
	for _, v := range maps(spec["volumes"]) {
		via := "volume " + str(v, "name")
		if m := nestedMap(v, "configMap"); m != nil && !optional(m) {
			c.add(core("ConfigMap", str(m, "name")), via)
		}
		if m := nestedMap(v, "secret"); m != nil && !optional(m) {
			c.add(core("Secret", str(m, "secretName")), via)
		}
		if m := nestedMap(v, "persistentVolumeClaim"); m != nil {
			c.add(core("PersistentVolumeClaim", str(m, "claimName")), via)
		}
		for _, src := range maps(nestedValue(v, "projected", "sources")) {
			if m := nestedMap(src, "configMap"); m != nil && !optional(m) {
				c.add(core("ConfigMap", str(m, "name")), via)
			}
			if m := nestedMap(src, "secret"); m != nil && !optional(m) {
				c.add(core("Secret", str(m, "name")), via)
			}
		}
	}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		for _, ctr := range maps(spec[list]) {
			name := str(ctr, "name")
			for _, ef := range maps(ctr["envFrom"]) {
				via := fmt.Sprintf("container %s envFrom", name)
				if m := nestedMap(ef, "configMapRef"); m != nil && !optional(m) {
					c.add(core("ConfigMap", str(m, "name")), via)
				}
				if m := nestedMap(ef, "secretRef"); m != nil && !optional(m) {
					c.add(core("Secret", str(m, "name")), via)
				}
			}
			for _, env := range maps(ctr["env"]) {
				via := fmt.Sprintf("container %s env %s", name, str(env, "name"))
				if m := nestedMap(env, "valueFrom", "configMapKeyRef"); m != nil && !optional(m) {
					c.add(core("ConfigMap", str(m, "name")), via)
				}
				if m := nestedMap(env, "valueFrom", "secretKeyRef"); m != nil && !optional(m) {
					c.add(core("Secret", str(m, "name")), via)
				}
			}
		}
	}
}

func (c *autoCollector) binding(key Key, obj map[string]any) {
	if ref := nestedMap(obj, "roleRef"); ref != nil {
		switch str(ref, "kind") {
		case "Role":
			if key.Kind == "RoleBinding" {
				c.add(Key{Group: rbacGroup, Kind: "Role", Namespace: key.Namespace, Name: str(ref, "name")}, "roleRef")
			}
		case "ClusterRole":
			c.add(Key{Group: rbacGroup, Kind: "ClusterRole", Name: str(ref, "name")}, "roleRef")
		}
	}
	for _, s := range maps(obj["subjects"]) {
		if str(s, "kind") != "ServiceAccount" {
			continue
		}
		ns := str(s, "namespace")
		if ns == "" {
			ns = key.Namespace
		}
		if ns == "" {
			continue
		}
		c.add(Key{Kind: "ServiceAccount", Namespace: ns, Name: str(s, "name")}, "subjects")
	}
}

func optional(m map[string]any) bool { b, _ := m["optional"].(bool); return b }

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func nestedValue(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func nestedMap(m map[string]any, path ...string) map[string]any {
	mm, _ := nestedValue(m, path...).(map[string]any)
	return mm
}

// maps returns the mappings of a YAML list, skipping items that are not mappings.
func maps(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
