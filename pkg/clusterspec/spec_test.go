package clusterspec

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const tokenKubeconfig = `apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: prod
  context: {cluster: prod, user: deployer}
- name: other
  context: {cluster: other, user: deployer}
clusters:
- name: prod
  cluster: {server: "https://prod.example:6443", certificate-authority-data: "Q0E="}
- name: other
  cluster: {server: "https://other.example:6443"}
users:
- name: deployer
  user: {token: s3cr3t-token}
`

func withUser(user string) string {
	return strings.Replace(tokenKubeconfig, "{token: s3cr3t-token}", user, 1)
}

func secret(lbl map[string]string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "sealane", Name: "cluster-prod", Labels: lbl}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestFromSecret(t *testing.T) {
	named := map[string]string{ClusterLabel: "prod", LabelPrefix + "env": "prod", LabelPrefix + "region": "eu", "app": "x"}
	tests := []struct {
		name    string
		secret  *corev1.Secret
		want    Spec
		wantErr string
	}{
		{name: "token kubeconfig", secret: secret(named, map[string]string{KubeconfigKey: tokenKubeconfig}),
			want: Spec{Name: "prod", Labels: map[string]string{"env": "prod", "region": "eu"}, Source: "secret sealane/cluster-prod"}},
		{name: "in-cluster", secret: secret(map[string]string{ClusterLabel: "home"}, map[string]string{InClusterKey: "true\n"}),
			want: Spec{Name: "home", Labels: map[string]string{}, Source: "secret sealane/cluster-prod", InCluster: true}},
		{name: "client certificate", secret: secret(named, map[string]string{KubeconfigKey: withUser(`{client-certificate-data: Q0VSVA==, client-key-data: S0VZ}`)}),
			want: Spec{Name: "prod", Labels: map[string]string{"env": "prod", "region": "eu"}, Source: "secret sealane/cluster-prod"}},
		{name: "no name label", secret: secret(map[string]string{"x": "y"}, nil), wantErr: "Secret sealane/cluster-prod: no sealane.dev/cluster label"},
		{name: "bad name", secret: secret(map[string]string{ClusterLabel: "Prod.EU"}, nil), wantErr: `Secret sealane/cluster-prod: label sealane.dev/cluster: cluster name "Prod.EU"`},
		{name: "no data", secret: secret(named, nil), wantErr: `no "kubeconfig" data key`},
		{name: "both", secret: secret(named, map[string]string{KubeconfigKey: tokenKubeconfig, InClusterKey: "true"}), wantErr: "has both"},
		{name: "in-cluster false", secret: secret(named, map[string]string{InClusterKey: "yes"}), wantErr: `"in-cluster" is "yes"`},
		{name: "empty kubeconfig", secret: secret(named, map[string]string{KubeconfigKey: " \n"}), wantErr: "Secret sealane/cluster-prod key kubeconfig: the kubeconfig is empty"},
		{name: "garbage", secret: secret(named, map[string]string{KubeconfigKey: "{not yaml"}), wantErr: "Secret sealane/cluster-prod key kubeconfig: not a kubeconfig"},
		{name: "exec plugin", secret: secret(named, map[string]string{KubeconfigKey: withUser(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}}`)}),
			wantErr: `Secret sealane/cluster-prod key kubeconfig: user "deployer" authenticates with a plugin (exec: aws)`},
		{name: "auth provider", secret: secret(named, map[string]string{KubeconfigKey: withUser(`{auth-provider: {name: gcp}}`)}),
			wantErr: "authenticates with a plugin (auth-provider: gcp)"},
		{name: "token file", secret: secret(named, map[string]string{KubeconfigKey: withUser(`{tokenFile: /var/run/token}`)}),
			wantErr: "tokenFile is a file path (/var/run/token)"},
		{name: "no server", secret: secret(named, map[string]string{KubeconfigKey: strings.Replace(tokenKubeconfig, `server: "https://prod.example:6443", `, "", 1)}),
			wantErr: `cluster "prod" has no server URL`},
		{name: "server not a URL", secret: secret(named, map[string]string{KubeconfigKey: strings.Replace(tokenKubeconfig, "https://prod.example:6443", "prod.example", 1)}),
			wantErr: `server "prod.example" is not an http(s) URL`},
		{name: "credentials in the server URL", secret: secret(named, map[string]string{KubeconfigKey: strings.Replace(tokenKubeconfig, "https://prod.example:6443", "https://admin:s3cr3t@prod.example:6443", 1)}),
			wantErr: `cluster "prod": the server URL holds credentials`},
		{name: "CA file", secret: secret(named, map[string]string{KubeconfigKey: strings.Replace(tokenKubeconfig, `certificate-authority-data: "Q0E="`, "certificate-authority: /etc/ca.crt", 1)}),
			wantErr: "certificate-authority is a file path (/etc/ca.crt)"},
		{name: "no current context", secret: secret(named, map[string]string{KubeconfigKey: strings.Replace(tokenKubeconfig, "current-context: prod", "", 1)}),
			wantErr: "no current-context and no context given (have other, prod)"},
		{name: "missing context", secret: secret(named, map[string]string{KubeconfigKey: strings.Replace(tokenKubeconfig, "current-context: prod", "current-context: gone", 1)}),
			wantErr: `context "gone" not found (have other, prod)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromSecret(tt.secret)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Fatalf("error leaks the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want.InCluster {
				if got.Kubeconfig == nil || got.Server() != "https://prod.example:6443" || len(got.Kubeconfig.Contexts) != 1 {
					t.Fatalf("kubeconfig not reduced to the prod context: server %q, %v", got.Server(), got.Kubeconfig)
				}
			}
			got.Kubeconfig = nil
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("spec (-want +got):\n%s", d)
			}
		})
	}
}

func TestNewSecretRoundTrip(t *testing.T) {
	cfg, err := DecodeKubeconfig([]byte(tokenKubeconfig), "test")
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Name: "prod", Labels: map[string]string{"env": "prod"}, Kubeconfig: cfg}
	s, err := NewSecret("sealane", spec)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "cluster-prod" || s.Labels[ClusterLabel] != "prod" || s.Labels[LabelPrefix+"env"] != "prod" {
		t.Fatalf("secret metadata: %+v", s.ObjectMeta)
	}
	if strings.Contains(string(s.Data[KubeconfigKey]), "other.example") {
		t.Fatalf("the stored kubeconfig keeps another context:\n%s", s.Data[KubeconfigKey])
	}
	back, err := FromSecret(s)
	if err != nil {
		t.Fatal(err)
	}
	if back.Name != "prod" || back.Server() != "https://prod.example:6443" || back.Labels["env"] != "prod" {
		t.Fatalf("round trip: %+v (server %s)", back, back.Server())
	}
	if back.Kubeconfig.AuthInfos["deployer"].Token != "s3cr3t-token" {
		t.Fatal("round trip lost the token")
	}
	in, err := NewSecret("sealane", Spec{Name: "home", InCluster: true})
	if err != nil || string(in.Data[InClusterKey]) != "true" {
		t.Fatalf("in-cluster secret: %v %v", in, err)
	}
}

func TestNewSecretRefuses(t *testing.T) {
	cfg, _ := DecodeKubeconfig([]byte(tokenKubeconfig), "test")
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
	}{
		{"bad name", Spec{Name: "a_b", Kubeconfig: cfg}, `cluster name "a_b"`},
		{"slash in label", Spec{Name: "a", Labels: map[string]string{"x/y": "1"}, Kubeconfig: cfg}, `cluster label "x/y": the key may not contain '/'`},
		{"bad label value", Spec{Name: "a", Labels: map[string]string{"env": "a b"}, Kubeconfig: cfg}, `cluster label env="a b": invalid value`},
		{"nothing", Spec{Name: "a"}, "no kubeconfig and not in-cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSecret("sealane", tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestParseLabels(t *testing.T) {
	tests := []struct {
		args    []string
		want    map[string]string
		wantErr string
	}{
		{args: nil, want: map[string]string{}},
		{args: []string{"env=prod", "region=eu", "empty="}, want: map[string]string{"env": "prod", "region": "eu", "empty": ""}},
		{args: []string{"env"}, wantErr: `label "env": want key=value`},
		{args: []string{"=x"}, wantErr: `want key=value`},
		{args: []string{"env=a", "env=b"}, wantErr: `label "env" given twice (a and b)`},
		{args: []string{"env=a", "env=a"}, want: map[string]string{"env": "a"}},
		{args: []string{"-bad=x"}, wantErr: `cluster label "-bad": invalid key`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, ","), func(t *testing.T) {
			got, err := ParseLabels(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	specs := []Spec{
		{Name: "us-prod", Labels: map[string]string{"env": "prod", "region": "us"}},
		{Name: "eu-prod", Labels: map[string]string{"env": "prod", "region": "eu"}},
		{Name: "eu-dev", Labels: map[string]string{"env": "dev", "region": "eu"}},
		{Name: "bare"},
	}
	tests := []struct {
		selector string
		want     []string
		wantErr  string
	}{
		{"", []string{"bare", "eu-dev", "eu-prod", "us-prod"}, ""},
		{"env=prod", []string{"eu-prod", "us-prod"}, ""},
		{"env=prod,region=eu", []string{"eu-prod"}, ""},
		{"region in (eu,us),env!=dev", []string{"eu-prod", "us-prod"}, ""},
		{"!env", []string{"bare"}, ""},
		{"env=missing", nil, ""},
		{"env==(", nil, `selector "env==("`},
	}
	for _, tt := range tests {
		t.Run(tt.selector, func(t *testing.T) {
			got, err := Select(specs, tt.selector)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range got {
				names = append(names, s.Name)
			}
			if d := cmp.Diff(tt.want, names); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}
