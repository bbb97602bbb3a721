package diff_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sealane/sealane/pkg/apply"
	"github.com/sealane/sealane/pkg/diff"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/kube/kubetest"
	"github.com/sealane/sealane/pkg/manifest"
)

var methods = []apply.Method{apply.ServerSideApply, apply.ThreeWayMerge}

// Canaries: values that must never appear in a plan, as written and base64-encoded.
const (
	canary1 = "c4n4ry-v4lue-one"
	canary2 = "c4n4ry-v4lue-two"
)

func canaries() []string {
	out := []string{canary1, canary2}
	for _, c := range []string{canary1, canary2} {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(c)))
	}
	return out
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func parse(t *testing.T, m string) []manifest.Object {
	t.Helper()
	objs, err := manifest.Parse(m)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return objs
}

// chart renders the test release. v is 1 or 2: revision 2 changes cfg, the Secret, the
// sensitive ConfigMaps and the Job's image, drops "gone" and adds "new".
func chart(t *testing.T, ns string, v int) []manifest.Object {
	t.Helper()
	secret := canary1
	if v == 2 {
		secret = canary2
	}
	m := fmt.Sprintf(`---
# Source: demo/templates/cfg.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: "%[1]d"%[3]s}
---
# Source: demo/templates/same.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: same}
data: {a: "1"}
---
# Source: demo/templates/drifted.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: drifted}
data: {a: "1"}
---
# Source: demo/templates/missing.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: missing}
data: {a: "1"}
---
# Source: demo/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata: {name: db}
stringData: {password: %[2]s, user: admin}
---
# Source: demo/templates/sensitive.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: sensitive
  annotations: {werf.io/sensitive: "true"}
data: {token: %[2]s, plain: also-hidden}
---
# Source: demo/templates/paths.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: paths
  annotations: {werf.io/sensitive-paths: "$.data.token"}
data: {token: %[2]s, plain: "shown-%[1]d"}
---
# Source: demo/templates/job.yaml
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: "busybox:%[1]d"}]
---
# Source: demo/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: nginx}]}
`, v, secret, map[int]string{1: `, b: dropped`, 2: ""}[v])
	if v == 1 {
		m += `---
# Source: demo/templates/gone.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: gone}
data: {a: "1"}
`
	} else {
		m += `---
# Source: demo/templates/new.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: new}
data: {a: "1"}
`
	}
	objs := parse(t, m)
	apply.WithReleaseMetadata(objs, "demo", ns)
	return objs
}

func named(objs []manifest.Object, name string) []manifest.Object {
	for _, o := range objs {
		if o.Obj.GetName() == name {
			return []manifest.Object{o}
		}
	}
	return nil
}

// guarded returns a Cluster like c that cannot write: any request that is not a dry run
// fails (kube.DryRunOnly), and so does the Changes that sent it.
func guarded(t *testing.T, c *kube.Cluster) *kube.Cluster {
	t.Helper()
	gc, err := kube.DryRunOnly(c)
	if err != nil {
		t.Fatal(err)
	}
	return gc
}

// versions returns the resourceVersion and UID of every object of the kinds the test uses in
// ns; for Jobs and Deployments, whose status their controllers keep writing, the generation
// (which moves when the spec does) instead of the resourceVersion.
func versions(t *testing.T, c *kube.Cluster, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{
		{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "secrets"},
		{Group: "batch", Version: "v1", Resource: "jobs"}, {Group: "apps", Version: "v1", Resource: "deployments"},
	} {
		list, err := c.Dynamic.Resource(gvr).Namespace(ns).List(ctx(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			if o.GetName() == "kube-root-ca.crt" {
				continue // the controller manager's
			}
			v := o.GetResourceVersion()
			if gvr.Group != "" {
				v = fmt.Sprint("generation ", o.GetGeneration())
			}
			out[gvr.Resource+"/"+o.GetName()] = v + "/" + string(o.GetUID())
		}
	}
	return out
}

// byName indexes changes by object name.
func byName(cs []diff.Change) map[string]diff.Change {
	out := map[string]diff.Change{}
	for _, c := range cs {
		out[c.Ref.Name] = c
	}
	return out
}

// noCanary fails the test when any text of the changes or err holds a canary.
func noCanary(t *testing.T, cs []diff.Change, err error) {
	t.Helper()
	var all strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&all, "%+v\n", c)
	}
	if err != nil {
		all.WriteString(err.Error())
	}
	for _, c := range canaries() {
		if strings.Contains(all.String(), c) {
			t.Errorf("plan output holds the sensitive value %q:\n%s", c, all.String())
		}
	}
}

// TestChanges deploys revision 1, edits the cluster by hand, and plans revision 2 with each
// method (and with server-side apply over a three-way merge deploy): every change type, drift,
// masking, and not a single write.
func TestChanges(t *testing.T) {
	base := kubetest.Cluster(t)
	for _, methods := range [][2]apply.Method{
		{apply.ServerSideApply, apply.ServerSideApply}, {apply.ThreeWayMerge, apply.ThreeWayMerge},
		{apply.ThreeWayMerge, apply.ServerSideApply},
	} {
		deployed, method := methods[0], methods[1]
		t.Run(string(deployed)+"-then-"+string(method), func(t *testing.T) {
			ns := kubetest.Namespace(t, base)
			v1 := chart(t, ns, 1)
			if _, err := apply.Apply(ctx(t), base, v1, apply.Options{DefaultNamespace: ns, Method: deployed}); err != nil {
				t.Fatal(err)
			}
			// By hand: a chart field edited, a field added by someone else, an object deleted.
			edit := func(name, patch, manager string) {
				t.Helper()
				_, err := base.Typed.CoreV1().ConfigMaps(ns).Patch(ctx(t), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager})
				if err != nil {
					t.Fatal(err)
				}
			}
			edit("drifted", `{"data":{"a":"edited"}}`, "kubectl-edit")
			edit("same", `{"metadata":{"labels":{"added-by":"controller"}},"data":{"extra":"x"}}`, "controller")
			if err := base.Typed.CoreV1().ConfigMaps(ns).Delete(ctx(t), "missing", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}

			c := guarded(t, base)
			before := versions(t, base, ns)
			v2 := chart(t, ns, 2)
			got, err := diff.Changes(ctx(t), c, v2, v1, diff.Options{Method: method, DefaultNamespace: ns, Delete: named(v1, "gone")})
			if err != nil {
				t.Fatalf("Changes: %v", err)
			}
			if after := versions(t, base, ns); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("the plan changed the cluster:\nbefore %v\nafter  %v", before, after)
			}
			noCanary(t, got, err)
			want := map[string]struct {
				typ   diff.Type
				drift bool
			}{
				"cfg": {diff.Update, false}, "same": {diff.Unchanged, false}, "drifted": {diff.Update, true},
				"missing": {diff.Create, true}, "db": {diff.Update, false}, "sensitive": {diff.Update, false},
				"paths": {diff.Update, false}, "migrate": {diff.Recreate, false}, "web": {diff.Unchanged, false},
				"new": {diff.Create, false}, "gone": {diff.Delete, false},
			}
			bn := byName(got)
			if len(got) != len(want) {
				t.Errorf("got %d changes, want %d: %+v", len(got), len(want), got)
			}
			for name, w := range want {
				ch, ok := bn[name]
				if !ok {
					t.Errorf("no change for %s", name)
					continue
				}
				if ch.Type != w.typ || ch.Drift != w.drift {
					t.Errorf("%s: %s drift=%v, want %s drift=%v (reason %q, problem %q)\n%s%s", name, ch.Type, ch.Drift, w.typ, w.drift, ch.Reason, ch.Problem, ch.Diff, ch.DriftDiff)
				}
				if (ch.Type == diff.Unchanged) != (ch.Diff == "") {
					t.Errorf("%s: %s with diff %q", name, ch.Type, ch.Diff)
				}
			}
			mustContain := func(name, field, text string, want ...string) {
				t.Helper()
				for _, w := range want {
					if !strings.Contains(text, w) {
						t.Errorf("%s %s lacks %q:\n%s", name, field, w, text)
					}
				}
			}
			mustContain("cfg", "diff", bn["cfg"].Diff, "--- live", "+++ planned", `-  a: "1"`, `+  a: "2"`, "-  b: dropped")
			mustContain("drifted", "drift diff", bn["drifted"].DriftDiff, "-  a: edited", `+  a: "1"`)
			mustContain("migrate", "reason", bn["migrate"].Reason, "immutable field spec.template")
			mustContain("migrate", "diff", bn["migrate"].Diff, "-      - image: busybox:1", "+      - image: busybox:2")
			mustContain("db", "diff", bn["db"].Diff, "-  password: '"+diff.MaskedValue([]byte(canary1))+"'", "+  password: '"+diff.MaskedValue([]byte(canary2))+"'")
			mustContain("sensitive", "diff", bn["sensitive"].Diff, "-  token: '"+diff.MaskedValue([]byte(canary1))+"'")
			mustContain("paths", "diff", bn["paths"].Diff, "-  plain: shown-1", "+  plain: shown-2", "+  token: '"+diff.MaskedValue([]byte(canary2))+"'")
			mustContain("gone", "diff", bn["gone"].Diff, "-kind: ConfigMap", "+++ deleted")
			for _, noisy := range []string{"managedFields", "resourceVersion", "uid:", "creationTimestamp", "status:"} {
				for _, ch := range got {
					if strings.Contains(ch.Diff, noisy) || strings.Contains(ch.DriftDiff, noisy) {
						t.Errorf("%s: diff holds %s:\n%s%s", ch.Ref, noisy, ch.Diff, ch.DriftDiff)
					}
				}
			}
			if diff.HasChanges(got) != true {
				t.Error("HasChanges = false")
			}
		})
	}
}

// TestChangesNothingToDo plans the deployed revision again: everything is unchanged, whichever
// method deployed it and whichever plans (a server-side apply plan over objects a three-way
// merge deployed dry-runs the three-way merge, as the applier takes their fields over first).
func TestChangesNothingToDo(t *testing.T) {
	base := kubetest.Cluster(t)
	for _, deployed := range methods {
		for _, method := range methods {
			t.Run(string(deployed)+"-then-"+string(method), func(t *testing.T) {
				ns := kubetest.Namespace(t, base)
				v1 := chart(t, ns, 1)
				if _, err := apply.Apply(ctx(t), base, v1, apply.Options{DefaultNamespace: ns, Method: deployed}); err != nil {
					t.Fatal(err)
				}
				got, err := diff.Changes(ctx(t), guarded(t, base), chart(t, ns, 1), v1, diff.Options{Method: method, DefaultNamespace: ns})
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range got {
					if ch.Type != diff.Unchanged || ch.Drift || ch.Diff != "" {
						t.Errorf("%s: %s drift=%v (%s)\n%s%s", ch.Ref, ch.Type, ch.Drift, ch.Reason, ch.Diff, ch.DriftDiff)
					}
				}
				if diff.HasChanges(got) {
					t.Error("HasChanges = true")
				}
			})
		}
	}
}

// TestChangesImmutable: an immutable field change recreates an object whose delete policy
// allows it and is a problem (as the deploy would fail) for one whose policy does not; the
// problem names the field, not the value.
func TestChangesImmutable(t *testing.T) {
	base := kubetest.Cluster(t)
	cm := func(name, annotations, value string) string {
		return fmt.Sprintf(`---
# Source: demo/templates/%[1]s.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: %[1]s, annotations: {%[2]s}}
immutable: true
data: {a: %[3]s}
`, name, annotations, value)
	}
	for _, method := range methods {
		t.Run(string(method), func(t *testing.T) {
			ns := kubetest.Namespace(t, base)
			objs := func(v string) []manifest.Object {
				return parse(t, cm("recreatable", `werf.io/delete-policy: before-creation-if-immutable`, v)+
					cm("fixed", `werf.io/sensitive: "true"`, v))
			}
			v1 := objs(canary1)
			if _, err := apply.Apply(ctx(t), base, v1, apply.Options{DefaultNamespace: ns, Method: method}); err != nil {
				t.Fatal(err)
			}
			got, err := diff.Changes(ctx(t), guarded(t, base), objs(canary2), v1, diff.Options{Method: method, DefaultNamespace: ns})
			if err == nil || !strings.Contains(err.Error(), "fixed") || !strings.Contains(err.Error(), "immutable") {
				t.Errorf("error = %v, want the fixed ConfigMap's immutable field named", err)
			}
			bn := byName(got)
			if ch := bn["recreatable"]; ch.Type != diff.Recreate || ch.Problem != "" {
				t.Errorf("recreatable: %s (%s) problem %q, want recreate", ch.Type, ch.Reason, ch.Problem)
			}
			if ch := bn["fixed"]; ch.Problem == "" || ch.Type != diff.Update {
				t.Errorf("fixed: %s with problem %q, want an update with a problem", ch.Type, ch.Problem)
			}
			// The non-sensitive ConfigMap's diff shows its values; the sensitive one's must not.
			if strings.Contains(bn["fixed"].Diff+bn["fixed"].Problem, canary1) || strings.Contains(bn["fixed"].Diff+bn["fixed"].Problem, canary2) {
				t.Errorf("fixed: sensitive value shown: %+v", bn["fixed"])
			}
			if strings.Contains(err.Error(), canary1) || strings.Contains(err.Error(), canary2) {
				t.Errorf("error quotes a value: %v", err)
			}
		})
	}
}

// TestChangesVolatileMetadata: annotations every deploy stamps anew (a commit) are not drift
// when they are declared volatile, and are when they are not.
func TestChangesVolatileMetadata(t *testing.T) {
	base := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, base)
	objs := func(commit string) []manifest.Object {
		o := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n")
		apply.WithMetadata(o, map[string]string{"ci.werf.io/commit": commit}, nil)
		return o
	}
	if _, err := apply.Apply(ctx(t), base, objs("aaa"), apply.Options{DefaultNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	// The pipeline decorates the previous revision with this deploy's metadata.
	for _, volatile := range []bool{true, false} {
		opts := diff.Options{DefaultNamespace: ns}
		if volatile {
			opts.VolatileAnnotations = []string{"ci.werf.io/commit"}
		}
		got, err := diff.Changes(ctx(t), guarded(t, base), objs("bbb"), objs("bbb"), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Type != diff.Update || got[0].Drift == volatile {
			t.Errorf("volatile=%v: %+v, want an update, drift %v", volatile, got, !volatile)
		}
	}
}

// TestChangesSpecialCases: hooks, objects of another release, kinds a CRD of the deploy
// defines, a namespace that does not exist, and deletions that do not happen.
func TestChangesSpecialCases(t *testing.T) {
	base := kubetest.Cluster(t)
	ns := kubetest.Namespace(t, base)
	existing := parse(t, `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: hook
  annotations: {helm.sh/hook: post-upgrade}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: theirs
  annotations: {meta.helm.sh/release-name: other, meta.helm.sh/release-namespace: elsewhere}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: kept
  annotations: {helm.sh/resource-policy: keep}
data: {a: "1"}
`)
	if _, err := apply.Apply(ctx(t), base, existing, apply.Options{DefaultNamespace: ns}); err != nil {
		t.Fatal(err)
	}
	objs := parse(t, `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: hook
  annotations: {helm.sh/hook: post-upgrade}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: new-hook
  annotations: {helm.sh/hook: post-upgrade}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: theirs}
data: {a: "2"}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.plan.sealane.dev}
spec:
  group: plan.sealane.dev
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: plan.sealane.dev/v1
kind: Widget
metadata: {name: w}
spec: {size: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: elsewhere, namespace: `+ns+`-does-not-exist}
data: {a: "1"}
`)
	apply.WithReleaseMetadata(named(objs, "theirs"), "demo", ns)
	deletions := parse(t, `---
apiVersion: v1
kind: ConfigMap
metadata: {name: absent}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kept}
`)
	for _, take := range []bool{false, true} {
		got, err := diff.Changes(ctx(t), guarded(t, base), objs, nil, diff.Options{DefaultNamespace: ns, Delete: deletions, TakeOwnership: take})
		if take != (err == nil) {
			t.Errorf("take ownership %v: error %v", take, err)
		}
		bn := byName(got)
		check := func(name string, typ diff.Type, reason string) {
			t.Helper()
			ch := bn[name]
			if ch.Type != typ || !strings.Contains(ch.Reason, reason) {
				t.Errorf("%s: %s (%q), want %s (%q)", name, ch.Type, ch.Reason, typ, reason)
			}
		}
		check("hook", diff.Recreate, "before-creation")
		check("new-hook", diff.Create, "")
		check("widgets.plan.sealane.dev", diff.Create, "")
		check("w", diff.Create, "CRD this deploy creates")
		check("elsewhere", diff.Create, "does not exist yet")
		check("absent", diff.Unchanged, "already absent")
		check("kept", diff.Unchanged, "kept: helm.sh/resource-policy: keep")
		if !bn["hook"].Hook || !bn["new-hook"].Hook || bn["w"].Hook {
			t.Error("hooks not marked as such")
		}
		if theirs := bn["theirs"]; take == (theirs.Problem != "") || theirs.Type != diff.Update {
			t.Errorf("take ownership %v: theirs is %s with problem %q", take, theirs.Type, theirs.Problem)
		}
		if !take && !strings.Contains(bn["theirs"].Problem, `belongs to release "other"`) {
			t.Errorf("adoption problem = %q", bn["theirs"].Problem)
		}
	}
}
