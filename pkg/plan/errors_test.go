package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

func inputOf(t *testing.T, kind Kind, text string) Input {
	t.Helper()
	objs, err := manifest.ParseLenient(text)
	if err != nil {
		t.Fatal(err)
	}
	return split(Input{Kind: kind, Release: "shop", Namespace: "shop"}, objs)
}

func deployment(key string) resource.Key {
	return resource.Key{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: key}
}

func TestCycles(t *testing.T) {
	tests := []struct {
		name        string
		yaml        string
		wantMembers [][]resource.Key
		wantMsg     []string
	}{
		{
			name: "two resources ready on each other",
			yaml: `# Source: shop/templates/a.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
  annotations: {werf.io/deploy-dependency-b: "state=ready,name=b"}
---
# Source: shop/templates/b.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
  annotations: {werf.io/deploy-dependency-a: "state=ready,name=a"}
`,
			wantMembers: [][]resource.Key{{deployment("a"), deployment("b")}},
			wantMsg: []string{"dependency cycle between 2 resources: shop/Deployment.apps/a (shop/templates/a.yaml (document 1, manifest line 1)) " +
				"waits for shop/Deployment.apps/b (shop/templates/b.yaml (document 1, manifest line 8)), which waits for shop/Deployment.apps/a"},
		},
		{
			name: "three resources present on each other, and a separate pair",
			yaml: `# Source: shop/templates/abc.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: a
  annotations: {werf.io/deploy-dependency-x: "state=present,name=b"}
---
# Source: shop/templates/abc.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: b
  annotations: {werf.io/deploy-dependency-x: "state=present,name=c"}
---
# Source: shop/templates/abc.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: c
  annotations: {werf.io/deploy-dependency-x: "state=present,name=a"}
---
# Source: shop/templates/pair.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: p
  annotations: {werf.io/deploy-dependency-x: "state=ready,name=q"}
---
# Source: shop/templates/pair.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: q
  annotations: {werf.io/deploy-dependency-x: "state=present,name=p"}
---
# Source: shop/templates/ok.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: self
  annotations: {werf.io/deploy-dependency-x: "state=ready,name=self"}
`,
			wantMembers: [][]resource.Key{{deployment("a"), deployment("b"), deployment("c")}, {deployment("p"), deployment("q")}},
			wantMsg: []string{
				"dependency cycle between 3 resources: shop/Deployment.apps/a (shop/templates/abc.yaml (document 1, manifest line 1)) waits for shop/Deployment.apps/b",
				"which waits for shop/Deployment.apps/c (shop/templates/abc.yaml (document 3, manifest line 15)), which waits for shop/Deployment.apps/a\n",
				"dependency cycle between 2 resources: shop/Deployment.apps/p",
			},
		},
		{
			name: "through a weight group",
			yaml: `# Source: shop/templates/cfg.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations: {werf.io/deploy-dependency-api: "state=ready,name=api"}
---
# Source: shop/templates/api.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  annotations: {werf.io/weight: "10"}
---
# Source: shop/templates/web.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      volumes: [{name: cfg, configMap: {name: cfg}}]
`,
			wantMembers: [][]resource.Key{{{Kind: "ConfigMap", Namespace: "shop", Name: "cfg"}, deployment("api"), deployment("web")}},
			wantMsg: []string{"shop/ConfigMap/cfg (shop/templates/cfg.yaml (document 1, manifest line 1)) waits for shop/Deployment.apps/api (shop/templates/api.yaml (document 1, manifest line 8)), " +
				"which waits for everything of weight 0 in stage main, which waits for shop/Deployment.apps/web (shop/templates/web.yaml (document 1, manifest line 15)), which waits for shop/ConfigMap/cfg"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(inputOf(t, Install, tt.yaml))
			var ce *CycleError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCycle) {
				t.Fatalf("want a *CycleError, got %v", err)
			}
			var members [][]resource.Key
			for _, c := range ce.Cycles {
				members = append(members, c.Members)
			}
			if diff := cmp.Diff(tt.wantMembers, members); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			for _, w := range tt.wantMsg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain\n  %q\nin\n%s", w, err)
				}
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		is   error
		want []string
	}{
		{
			name: "invalid annotation values, all of them, naming template and line",
			in: inputOf(t, Install, `# Source: shop/templates/a.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  annotations: {werf.io/weight: ten}
---
# Source: shop/templates/b.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: b
  annotations:
    helm.sh/hook: pre-install
    helm.sh/hook-weight: "1.5"
    helm.sh/hook-delete-policy: always
`),
			is: resource.ErrInvalidAnnotation,
			want: []string{
				`shop/templates/a.yaml (document 1, manifest line 1): shop/ConfigMap/a: annotation werf.io/weight: invalid value "ten"`,
				`shop/templates/b.yaml (document 1, manifest line 8): shop/Job/b: annotation helm.sh/hook-weight: invalid value "1.5"`,
				`shop/templates/b.yaml (document 1, manifest line 8): shop/Job/b: annotation helm.sh/hook-delete-policy: invalid value "always"`,
			},
		},
		{
			name: "duplicates",
			in: inputOf(t, Install, `# Source: shop/templates/a.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
# Source: shop/templates/b.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: shop}
`),
			is:   ErrDuplicate,
			want: []string{"shop/templates/b.yaml (document 1, manifest line 6): duplicate resource shop/ConfigMap/a: also in shop/templates/a.yaml (document 1, manifest line 1)"},
		},
		{
			name: "unknown deploy kind",
			in:   Input{Kind: "deploy"},
			want: []string{`unknown deploy kind "deploy"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.in)
			if err == nil {
				t.Fatal("want an error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("want errors.Is(%v), got %v", tt.is, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain\n  %s\nin\n%s", w, err)
				}
			}
		})
	}
}

func TestEmptyPlan(t *testing.T) {
	p, err := Build(Input{Kind: Install, Release: "shop", Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Operations) != 0 || len(p.Phases) != 0 {
		t.Errorf("want an empty plan, got %d operations, %d phases", len(p.Operations), len(p.Phases))
	}
}

func TestPlanLookups(t *testing.T) {
	p, err := Build(loadCase(t, "deletions"))
	if err != nil {
		t.Fatal(err)
	}
	app := deployment("app")
	if r := p.Resource(app); r == nil || r.Key != app {
		t.Errorf("Resource(%s) = %v", app, r)
	}
	old := deployment("old-worker")
	if r := p.Resource(old); r == nil || r.Key != old {
		t.Errorf("Resource(%s) must find the deletion, got %v", old, r)
	}
	if r := p.Resource(deployment("nope")); r != nil {
		t.Errorf("Resource of an unknown key = %v, want nil", r)
	}
	if op := p.Operation("delete/cleanup/shop/Deployment.apps/old-worker"); op == nil || op.Type != OpDelete || op.Phase == 0 {
		t.Errorf("Operation(delete of old-worker) = %+v", op)
	}
	if op := p.Operation("nope"); op != nil {
		t.Errorf("Operation(nope) = %+v, want nil", op)
	}
}
