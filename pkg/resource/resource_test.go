package resource

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/sealane/sealane/pkg/manifest"
)

func objects(t *testing.T, text string) []manifest.Object {
	t.Helper()
	objs, err := manifest.Parse(text)
	if err != nil {
		t.Fatalf("manifest.Parse: %v", err)
	}
	return objs
}

func parseOne(t *testing.T, text string, origin Origin) (*Resource, error) {
	t.Helper()
	objs := objects(t, text)
	if len(objs) != 1 {
		t.Fatalf("want 1 object, got %d", len(objs))
	}
	return Parse(objs[0], origin, Options{Namespace: "shop"})
}

func intp(n int) *int { return &n }

func TestParseDefaultsAndAnnotations(t *testing.T) {
	tests := []struct {
		name   string
		origin Origin
		yaml   string
		want   Resource
	}{
		{
			name:   "plain resource",
			origin: FromTemplates,
			yaml: `# Source: shop/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
`,
			want: Resource{
				Ref:       manifest.Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "cfg"},
				Key:       Key{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"},
				Location:  Location{Source: "shop/templates/cm.yaml", Doc: 1, Line: 1},
				Origin:    FromTemplates,
				DeployOn:  DefaultDeployOn,
				Lifecycle: Lifecycle{Ownership: OwnershipRelease, DeletePropagation: "Foreground", TrackTermination: WaitUntilResourceReady},
			},
		},
		{
			name:   "every annotation of a resource",
			origin: FromTemplates,
			yaml: `# Source: shop/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: other
  annotations:
    werf.io/weight: "-10"
    helm.sh/hook-weight: "7"
    werf.io/deploy-dependency-db: state=ready,kind=StatefulSet,name=postgres
    werf.io/deploy-dependency-app: state=present,kind=Deployment,group=apps,version=v1,name=app,namespace=app
    secret.external-dependency.werf.io/resource: secret/config
    someapp.external-dependency.werf.io/resource: deployments.v1.apps/app
    someapp.external-dependency.werf.io/namespace: infra
    werf.io/ownership: anyone
    werf.io/deploy-on: upgrade,install
    werf.io/delete-policy: before-creation,succeeded
    werf.io/delete-propagation: Background
    werf.io/replicas-on-creation: "3"
    werf.io/set-replicas-only-on-creation: "true"
    werf.io/set-resources-only-on-creation: "true"
    werf.io/allow-adoption-by-release: shop-production
    helm.sh/resource-policy: keep
    werf.io/track-termination-mode: NonBlocking
    werf.io/fail-mode: IgnoreAndContinueDeployProcess
    werf.io/failures-allowed-per-replica: "0"
    werf.io/ignore-readiness-probe-fails-for-app: 20s
    werf.io/no-activity-timeout: 8m30s
    werf.io/log-regex: ".*ERROR.*"
    werf.io/log-regex-for-app: "^x"
    werf.io/log-regex-skip: healthz
    werf.io/skip-logs: "false"
    werf.io/skip-logs-for-containers: sidecar
    werf.io/show-logs-only-for-containers: app
    werf.io/show-logs-only-for-number-of-replicas: "2"
    werf.io/show-service-messages: "true"
    werf.io/sensitive: "true"
`,
			want: Resource{
				Ref:      manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "other", Name: "web"},
				Key:      Key{Group: "apps", Kind: "Deployment", Namespace: "other", Name: "web"},
				Location: Location{Source: "shop/templates/web.yaml", Doc: 1, Line: 1},
				Origin:   FromTemplates,
				DeployOn: []Event{EventInstall, EventUpgrade},
				Weight:   -10,
				Dependencies: []Dependency{
					{ID: "app", State: StatePresent, Kind: "Deployment", Group: "apps", Version: "v1", Name: "app", Namespace: "app"},
					{ID: "db", State: StateReady, Kind: "StatefulSet", Name: "postgres"},
				},
				External: []ExternalDependency{
					{ID: "secret", Type: "secret", Name: "config", Namespace: "other"},
					{ID: "someapp", Type: "deployments", Version: "v1", Group: "apps", Name: "app", Namespace: "infra"},
				},
				Lifecycle: Lifecycle{
					Ownership:         OwnershipAnyone,
					DeletePolicies:    []DeletePolicy{DeleteBeforeCreation, DeleteSucceeded},
					DeletePropagation: "Background",
					Keep:              true,
					AllowAdoptionBy:   "shop-production",
					TrackTermination:  NonBlocking,
				},
				Creation: Creation{Replicas: intp(3), KeepReplicas: true, KeepResources: true},
				Tracking: map[string]string{
					"werf.io/track-termination-mode":                "NonBlocking",
					"werf.io/fail-mode":                             "IgnoreAndContinueDeployProcess",
					"werf.io/failures-allowed-per-replica":          "0",
					"werf.io/ignore-readiness-probe-fails-for-app":  "20s",
					"werf.io/no-activity-timeout":                   "8m30s",
					"werf.io/log-regex":                             ".*ERROR.*",
					"werf.io/log-regex-for-app":                     "^x",
					"werf.io/log-regex-skip":                        "healthz",
					"werf.io/skip-logs":                             "false",
					"werf.io/skip-logs-for-containers":              "sidecar",
					"werf.io/show-logs-only-for-containers":         "app",
					"werf.io/show-logs-only-for-number-of-replicas": "2",
					"werf.io/show-service-messages":                 "true",
				},
			},
		},
		{
			name:   "hook defaults",
			origin: FromTemplates,
			yaml: `# Source: shop/templates/migrate.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations:
    helm.sh/hook: post-upgrade, Pre-Install
    helm.sh/hook-weight: "-5"
    werf.io/weight: "100"
`,
			want: Resource{
				Ref:       manifest.Ref{APIVersion: "batch/v1", Kind: "Job", Namespace: "shop", Name: "migrate"},
				Key:       Key{Group: "batch", Kind: "Job", Namespace: "shop", Name: "migrate"},
				Location:  Location{Source: "shop/templates/migrate.yaml", Doc: 1, Line: 1},
				Origin:    FromTemplates,
				Hook:      []Event{EventPreInstall, EventPostUpgrade},
				DeployOn:  []Event{EventPreInstall, EventPostUpgrade},
				Weight:    -5,
				Lifecycle: Lifecycle{Ownership: OwnershipAnyone, DeletePolicies: []DeletePolicy{DeleteBeforeCreation}, DeletePropagation: "Foreground", TrackTermination: WaitUntilResourceReady},
			},
		},
		{
			name:   "hook with Helm delete policy, deploy-on and ownership",
			origin: FromTemplates,
			yaml: `# Source: shop/templates/t.yaml
apiVersion: v1
kind: Pod
metadata:
  name: t
  annotations:
    helm.sh/hook: test
    helm.sh/hook-delete-policy: hook-succeeded,hook-failed
    werf.io/deploy-on: post-install
    werf.io/ownership: release
`,
			want: Resource{
				Ref:       manifest.Ref{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "t"},
				Key:       Key{Kind: "Pod", Namespace: "shop", Name: "t"},
				Location:  Location{Source: "shop/templates/t.yaml", Doc: 1, Line: 1},
				Origin:    FromTemplates,
				Hook:      []Event{EventTest},
				DeployOn:  []Event{EventPostInstall},
				Lifecycle: Lifecycle{Ownership: OwnershipRelease, DeletePolicies: []DeletePolicy{DeleteSucceeded, DeleteFailed}, DeletePropagation: "Foreground", TrackTermination: WaitUntilResourceReady},
			},
		},
		{
			name:   "crds/ file: cluster-scoped, owned by anyone",
			origin: FromCRDsDir,
			yaml: `# Source: crds/widgets.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, namespace: ignored}
`,
			want: Resource{
				Ref:       manifest.Ref{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
				Key:       Key{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"},
				Location:  Location{Source: "crds/widgets.yaml", Doc: 1, Line: 1},
				Origin:    FromCRDsDir,
				DeployOn:  DefaultDeployOn,
				Lifecycle: Lifecycle{Ownership: OwnershipAnyone, DeletePropagation: "Foreground", TrackTermination: WaitUntilResourceReady},
			},
		},
		{
			name:   "the release namespace is never deleted",
			origin: FromTemplates,
			yaml: `# Source: shop/templates/ns.yaml
apiVersion: v1
kind: Namespace
metadata: {name: shop}
`,
			want: Resource{
				Ref:       manifest.Ref{APIVersion: "v1", Kind: "Namespace", Name: "shop"},
				Key:       Key{Kind: "Namespace", Name: "shop"},
				Location:  Location{Source: "shop/templates/ns.yaml", Doc: 1, Line: 1},
				Origin:    FromTemplates,
				DeployOn:  DefaultDeployOn,
				Lifecycle: Lifecycle{Ownership: OwnershipAnyone, Keep: true, DeletePropagation: "Foreground", TrackTermination: WaitUntilResourceReady},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseOne(t, tt.yaml, tt.origin)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrorsNameTemplateAndAnnotation(t *testing.T) {
	objs := objects(t, `---
# Source: shop/templates/ok.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: ok}
---
# Source: shop/templates/bad.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: bad
  annotations:
    werf.io/weight: ten
    werf.io/deploy-dependency-db: ready
    werf.io/deploy-dependency-: state=ready,name=x
    x.external-dependency.werf.io/resource: secret
    y.external-dependency.werf.io/resource: secret/y
    y.external-dependency.werf.io/namespace: Bad_NS
    werf.io/ownership: me
    werf.io/deploy-on: instal
    werf.io/delete-policy: hook-failed
    werf.io/replicas-on-creation: "-1"
    werf.io/set-replicas-only-on-creation: "yes"
    werf.io/set-resources-only-on-creation: "on"
    werf.io/allow-adoption-by-release: Shop_Prod
    werf.io/track-termination-mode: Blocking
    werf.io/delete-propagation: Now
    helm.sh/resource-policy: delete
`)
	_, err := Parse(objs[1], FromTemplates, Options{Namespace: "shop"})
	if !errors.Is(err, ErrInvalidAnnotation) {
		t.Fatalf("want ErrInvalidAnnotation, got %v", err)
	}
	var ae *AnnotationError
	if !errors.As(err, &ae) || ae.Location.Source != "shop/templates/bad.yaml" || ae.Location.Line != 7 {
		t.Fatalf("want an *AnnotationError at shop/templates/bad.yaml line 7, got %#v", ae)
	}
	want := []string{
		`shop/templates/bad.yaml (document 1, manifest line 7): shop/Deployment/bad: annotation werf.io/weight: invalid value "ten": must be an integer in quotes, e.g. "10" or "-5"`,
		`shop/templates/bad.yaml (document 1, manifest line 7): shop/Deployment/bad: annotation werf.io/deploy-on: invalid value "instal": unknown item "instal"; items must be among pre-install, install, post-install, pre-upgrade, upgrade, post-upgrade, pre-rollback, rollback, post-rollback, pre-delete, delete, post-delete, test, test-success`,
		`annotation werf.io/delete-policy: invalid value "hook-failed": unknown item "hook-failed"; items must be among before-creation, before-creation-if-immutable, succeeded, failed`,
		`annotation werf.io/ownership: invalid value "me": must be one of release, anyone`,
		`annotation helm.sh/resource-policy: invalid value "delete": the only resource policy is "keep"`,
		`annotation werf.io/delete-propagation: invalid value "Now": must be one of Foreground, Background, Orphan`,
		`annotation werf.io/allow-adoption-by-release: invalid value "Shop_Prod": must be a release name`,
		`annotation werf.io/track-termination-mode: invalid value "Blocking": must be one of WaitUntilResourceReady, NonBlocking`,
		`annotation werf.io/replicas-on-creation: invalid value "-1": must be a whole number >= 0`,
		`annotation werf.io/set-replicas-only-on-creation: invalid value "yes": must be "true" or "false"`,
		`annotation werf.io/set-resources-only-on-creation: invalid value "on": must be "true" or "false"`,
		`annotation werf.io/deploy-dependency-: invalid value "state=ready,name=x": annotation key has no dependency id`,
		`annotation werf.io/deploy-dependency-db: invalid value "ready": "ready" is not key=value`,
		`annotation x.external-dependency.werf.io/resource: invalid value "secret": must have exactly one "/"`,
		`annotation y.external-dependency.werf.io/namespace: invalid value "Bad_NS": must be a namespace name`,
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error does not contain\n  %s\nin\n%s", w, msg)
		}
	}
	if n := strings.Count(msg, "\n") + 1; n != len(want) {
		t.Errorf("want %d errors, got %d:\n%s", len(want), n, msg)
	}
}

func TestParseIgnoresHookOnlyAnnotationsOnResources(t *testing.T) {
	r, err := parseOne(t, `apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  annotations:
    helm.sh/hook-weight: "5"
    helm.sh/hook-delete-policy: hook-succeeded
`, FromTemplates)
	if err != nil {
		t.Fatal(err)
	}
	if r.Weight != 0 || len(r.Lifecycle.DeletePolicies) != 0 || r.IsHook() {
		t.Errorf("hook annotations must not apply to a resource: weight %d, policies %v", r.Weight, r.Lifecycle.DeletePolicies)
	}
}

func TestScopes(t *testing.T) {
	var s Scopes
	objs := objects(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterwidgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: ClusterWidget}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget}
`)
	for _, o := range objs {
		s.AddCRD(o.Obj)
	}
	s.Fallback = func(gk schema.GroupKind) bool { return gk.Kind == "Remote" }
	for gk, want := range map[schema.GroupKind]bool{
		{Group: "example.com", Kind: "ClusterWidget"}:             true,
		{Group: "example.com", Kind: "Widget"}:                    false,
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: true,
		{Group: "apps", Kind: "Deployment"}:                       false,
		{Group: "other.io", Kind: "Remote"}:                       true,
	} {
		if got := s.ClusterScoped(gk); got != want {
			t.Errorf("ClusterScoped(%v) = %v, want %v", gk, got, want)
		}
	}
	var nilScopes *Scopes
	if !nilScopes.ClusterScoped(schema.GroupKind{Kind: "Namespace"}) {
		t.Error("a nil *Scopes must know the built-in kinds")
	}
}

func TestKeyText(t *testing.T) {
	for _, k := range []Key{
		{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"},
		{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"},
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "reader"},
		{Kind: "Namespace", Name: "shop"},
	} {
		data, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		var back Key
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", data, err)
		}
		if back != k {
			t.Errorf("round trip of %s: got %+v, want %+v", data, back, k)
		}
	}
	if got := KeyOf(manifest.Ref{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}); got != (Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}) {
		t.Errorf("KeyOf = %+v", got)
	}
	var k Key
	if err := k.UnmarshalText([]byte("a/b/c/d")); err == nil {
		t.Error("want an error for a key with four parts")
	}
}

func TestDependencyMatches(t *testing.T) {
	r := &Resource{Ref: manifest.Ref{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "shop", Name: "db"},
		Key: Key{Group: "apps", Kind: "StatefulSet", Namespace: "shop", Name: "db"}}
	tests := []struct {
		dep  Dependency
		want bool
	}{
		{Dependency{Name: "db"}, true},
		{Dependency{Kind: "statefulset", Name: "db"}, true},
		{Dependency{Kind: "StatefulSet", Group: "APPS", Version: "v1", Namespace: "shop", Name: "db"}, true},
		{Dependency{Kind: "Deployment", Name: "db"}, false},
		{Dependency{Namespace: "other", Name: "db"}, false},
		{Dependency{Version: "v2"}, false},
		{Dependency{Group: "batch"}, false},
	}
	for _, tt := range tests {
		if got := tt.dep.Matches(r); got != tt.want {
			t.Errorf("%s matches %s = %v, want %v", tt.dep, r.Key, got, tt.want)
		}
	}
}
