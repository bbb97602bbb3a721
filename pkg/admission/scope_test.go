package admission

import (
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/sealane/sealane/events"
)

func publicKey(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return pub
}

// TestParseClientKeysScopes: the mapping form gives a client keys and a scope; the plain
// forms and a mapping with keys only stay operator clients (no scope); a scope that cannot
// work is refused naming the client and the field.
func TestParseClientKeysScopes(t *testing.T) {
	op, opList, opMap, team := publicKey(t), publicKey(t), publicKey(t), publicKey(t)
	keys, err := ParseClientKeys([]byte(`
ci: ` + op + `
alice: [` + opList + `]
ops:
  keys: ` + opMap + `
team-a:
  keys: [` + team + `]
  namespaces: [team-a, team-a-*]
  clusters: [prod-*]
  clusterScoped: [IngressClass.networking.k8s.io, Namespace]
  serviceAccount: team-a/sealane-deployer
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ci", "alice", "ops"} {
		if s := keys.Scope(name); s != nil {
			t.Errorf("Scope(%s) = %v, want none: an operator client", name, s)
		}
	}
	if n, _ := keys.Client(opMap); n != "ops" {
		t.Errorf("Client(ops key) = %q", n)
	}
	if n, _ := keys.Client(team); n != "team-a" {
		t.Errorf("Client(team-a key) = %q", n)
	}
	s := keys.Scope("team-a")
	if s == nil {
		t.Fatal("team-a has no scope")
	}
	for _, tt := range []struct {
		what string
		got  bool
		want bool
	}{
		{"namespace team-a", s.AllowsNamespace("team-a"), true},
		{"namespace team-a-jobs (glob)", s.AllowsNamespace("team-a-jobs"), true},
		{"namespace team-b", s.AllowsNamespace("team-b"), false},
		{"namespace kube-system", s.AllowsNamespace("kube-system"), false},
		{"cluster prod-eu", s.AllowsCluster("prod-eu"), true},
		{"cluster staging", s.AllowsCluster("staging"), false},
		{"IngressClass", s.AllowsClusterKind("networking.k8s.io", "IngressClass"), true},
		{"Namespace", s.AllowsClusterKind("", "Namespace"), true},
		{"ClusterRoleBinding", s.AllowsClusterKind("rbac.authorization.k8s.io", "ClusterRoleBinding"), false},
		{"IngressClass of another group", s.AllowsClusterKind("example.com", "IngressClass"), false},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: allowed %v, want %v", tt.what, tt.got, tt.want)
		}
	}
	if u := s.ServiceAccountUser(); u != "system:serviceaccount:team-a:sealane-deployer" {
		t.Errorf("ServiceAccountUser = %q", u)
	}
	all := Scope{Namespaces: []string{"x"}, ClusterScoped: []string{"*"}, ServiceAccount: "x/y"}
	if !all.AllowsClusterKind("rbac.authorization.k8s.io", "ClusterRole") || !all.AllowsCluster("any") {
		t.Error(`clusterScoped ["*"] and no clusters: every kind and cluster`)
	}

	for _, tt := range []struct {
		name, yaml, err string
	}{
		{"no namespaces", "team-a:\n  keys: " + team + "\n  serviceAccount: team-a/d\n", "client team-a: a scoped client needs namespaces"},
		{"no service account", "team-a:\n  keys: " + team + "\n  namespaces: [team-a]\n", "client team-a: a scoped client needs serviceAccount"},
		{"service account without namespace", "team-a:\n  keys: " + team + "\n  namespaces: [team-a]\n  serviceAccount: deployer\n", `serviceAccount "deployer": want namespace/name`},
		{"bad namespace", "team-a:\n  keys: " + team + "\n  namespaces: [Team_A]\n  serviceAccount: team-a/d\n", `namespaces: "Team_A" is neither a name nor a glob`},
		{"bad glob", "team-a:\n  keys: " + team + "\n  namespaces: [\"team-[a\"]\n  serviceAccount: team-a/d\n", `namespaces: "team-[a"`},
		{"bad kind", "team-a:\n  keys: " + team + "\n  namespaces: [team-a]\n  clusterScoped: [cluster role]\n  serviceAccount: team-a/d\n", `clusterScoped: "cluster role" is not a kind`},
		{"unknown field", "team-a:\n  keys: " + team + "\n  namespace: team-a\n", `unknown field "namespace"`},
		{"no keys", "team-a:\n  namespaces: [team-a]\n  serviceAccount: team-a/d\n", "client team-a: no key"},
		{"a seed among the keys", "team-a:\n  keys: [SUAKYRHVIOREXV7EUZTBHUHL7NUMHPMAS7QMDU3GTIUWEI5LDNOXD43IZY]\n  namespaces: [team-a]\n  serviceAccount: team-a/d\n", "is not a public user nkey"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseClientKeys([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ParseClientKeys = %v, want %q", err, tt.err)
			}
			if strings.Contains(err.Error(), "SUAKYRHV") {
				t.Fatalf("the error shows the seed: %v", err)
			}
		})
	}
}

// TestScopeCheckRequest: a scoped client's request must target a cluster and a namespace of
// its scope, keep its records there, and may not delete its namespace unless Namespace is
// granted; an operator client (nil scope) is refused nothing.
func TestScopeCheckRequest(t *testing.T) {
	s := &Scope{Namespaces: []string{"team-a", "team-a-*"}, Clusters: []string{"prod"}, ServiceAccount: "team-a/deployer"}
	withNS := &Scope{Namespaces: []string{"team-a"}, ClusterScoped: []string{"Namespace"}, ServiceAccount: "team-a/deployer"}
	req := func(cluster, ns string, mod func(*events.RequestedData)) events.RequestedData {
		r := events.RequestedData{Target: events.Target{Cluster: cluster, Namespace: ns, Release: "web"}}
		if mod != nil {
			mod(&r)
		}
		return r
	}
	for _, tt := range []struct {
		name  string
		scope *Scope
		req   events.RequestedData
		want  []string
	}{
		{"its namespace", s, req("prod", "team-a", nil), nil},
		{"a namespace of its glob", s, req("prod", "team-a-review-1", nil), nil},
		{"an operator client: anything", nil, req("staging", "kube-system", nil), nil},
		{"another cluster", s, req("staging", "team-a", nil), []string{"client team-a may not deploy to cluster staging (its scope: clusters prod)", "--client-keys"}},
		{"another namespace", s, req("prod", "kube-system", nil), []string{"may not deploy into namespace kube-system (its scope: namespaces team-a, team-a-*)", "ask the operator to grant it"}},
		{"records in another namespace", s, req("prod", "team-a", func(r *events.RequestedData) { r.ReleaseStorage.Namespace = "kube-system" }),
			[]string{"may not keep release records in namespace kube-system"}},
		{"records in its namespace", s, req("prod", "team-a", func(r *events.RequestedData) { r.ReleaseStorage.Namespace = "team-a-records" }), nil},
		{"uninstall deleting the namespace", s, req("prod", "team-a", func(r *events.RequestedData) {
			r.Operation, r.WithNamespace = events.OperationUninstall, true
		}), []string{"may not delete namespace team-a (a cluster-scoped Namespace; its scope grants no cluster-scoped kind)", "without --with-namespace"}},
		{"uninstall deleting the namespace, granted", withNS, req("prod", "team-a", func(r *events.RequestedData) {
			r.Operation, r.WithNamespace = events.OperationUninstall, true
		}), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.scope.CheckRequest("team-a", tt.req)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckRequest = %v, want allowed", err)
				}
				return
			}
			if err == nil {
				t.Fatal("allowed, want a refusal")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}
