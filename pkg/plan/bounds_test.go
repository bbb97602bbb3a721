package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/manifest"
)

// teamA is a tenant's bounds: namespaces team-a and team-a-jobs, IngressClass granted.
type teamA struct{}

func (teamA) AllowsNamespace(ns string) bool { return ns == "team-a" || ns == "team-a-jobs" }
func (teamA) AllowsClusterKind(group, kind string) bool {
	return group == "networking.k8s.io" && kind == "IngressClass"
}

func boundsDoc(source, body string) string { return "---\n# Source: " + source + "\n" + body + "\n" }

// TestCheckBounds: a tenant's plan may write namespaced objects in its namespaces and the
// cluster-scoped kinds granted to it; anything else — a ClusterRoleBinding, a Namespace, a CRD
// of crds/, a webhook configuration, an object in kube-system, a hook in another namespace, the
// deletion of a cluster-scoped object of the previous revision — is refused, each object
// named with its template.
func TestCheckBounds(t *testing.T) {
	cm := func(ns string) string {
		s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s
	}
	crb := "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: root\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: default, namespace: team-a}]"
	for _, tt := range []struct {
		name     string
		kind     Kind
		objects  string
		crds     string
		previous string
		want     []string // substrings of the refusal, each object's; nil: allowed
		objs     int
	}{
		{name: "namespaced objects in the release namespace", objects: boundsDoc("app/templates/cm.yaml", cm("")), want: nil},
		{name: "an object in another allowed namespace", objects: boundsDoc("app/templates/cm.yaml", cm("team-a-jobs")), want: nil},
		{name: "a granted cluster-scoped kind",
			objects: boundsDoc("app/templates/ic.yaml", "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata:\n  name: team-a"), want: nil},
		{name: "ClusterRoleBinding to cluster-admin", objects: boundsDoc("app/templates/crb.yaml", crb), objs: 1,
			want: []string{"ClusterRoleBinding.rbac.authorization.k8s.io/root (cluster-scoped, from app/templates/crb.yaml", "the deploy creates a cluster-scoped object"}},
		{name: "object in kube-system", objects: boundsDoc("app/templates/cm.yaml", cm("kube-system")), objs: 1,
			want: []string{"ConfigMap/cfg in namespace kube-system (from app/templates/cm.yaml", "creates an object in namespace kube-system"}},
		{name: "a Namespace", objects: boundsDoc("app/templates/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a"), objs: 1,
			want: []string{"Namespace/team-a (cluster-scoped"}},
		{name: "a CRD of crds/", crds: boundsDoc("app/crds/widgets.yaml",
			"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true}]"),
			objs: 1, want: []string{"CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com (cluster-scoped, from app/crds/widgets.yaml"}},
		{name: "a webhook configuration", objects: boundsDoc("app/templates/wh.yaml", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: team-a"), objs: 1,
			want: []string{"ValidatingWebhookConfiguration.admissionregistration.k8s.io/team-a (cluster-scoped"}},
		{name: "a hook in another namespace", objects: boundsDoc("app/templates/job.yaml",
			"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: team-b\n  annotations: {helm.sh/hook: pre-install}\nspec: {template: {spec: {containers: [{name: m, image: busybox}], restartPolicy: Never}}}"),
			objs: 1, want: []string{"Job.batch/migrate in namespace team-b (from app/templates/job.yaml"}},
		{name: "every object at fault named", objects: boundsDoc("app/templates/crb.yaml", crb) + boundsDoc("app/templates/cm.yaml", cm("kube-system")) + boundsDoc("app/templates/ok.yaml", cm("")),
			objs: 2, want: []string{"2 object(s) outside the client's scope", "ClusterRoleBinding", "kube-system"}},
		{name: "deleting a cluster-scoped object of the previous revision", kind: Upgrade, objects: boundsDoc("app/templates/cm.yaml", cm("")),
			previous: boundsDoc("previous/app/templates/crb.yaml", crb), objs: 1,
			want: []string{"ClusterRoleBinding.rbac.authorization.k8s.io/root (cluster-scoped, from the previous revision's manifest): the deploy deletes"}},
		{name: "uninstall of a release with an object in another namespace", kind: Delete,
			previous: boundsDoc("previous/app/templates/cm.yaml", cm("kube-system")), objs: 1,
			want: []string{"ConfigMap/cfg in namespace kube-system", "deletes an object in namespace kube-system"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Kind: tt.kind, Release: "app", Namespace: "team-a"}
			if in.Kind == "" {
				in.Kind = Install
			}
			for _, part := range []struct {
				text string
				to   *[]manifest.Object
			}{{tt.objects, &in.Objects}, {tt.crds, &in.CRDs}, {tt.previous, &in.Previous}} {
				objs, err := manifest.Parse(part.text)
				if err != nil {
					t.Fatal(err)
				}
				*part.to = objs
			}
			p, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckBounds(p, nil); err != nil {
				t.Fatalf("no bounds (an operator client): %v", err)
			}
			err = CheckBounds(p, teamA{})
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckBounds = %v, want allowed", err)
				}
				return
			}
			var be *BoundsError
			if !errors.As(err, &be) || len(be.Objects) != tt.objs {
				t.Fatalf("CheckBounds = %v, want a *BoundsError of %d object(s)", err, tt.objs)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q\nwant it to contain %q", err, w)
				}
			}
			if slices.ContainsFunc(be.Objects, func(o OutOfBounds) bool { return o.Resource.Namespace == "team-a" }) {
				t.Errorf("an object in team-a refused: %v", be.Objects)
			}
		})
	}
}
