package resource

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAutoDependencies(t *testing.T) {
	cm := func(name string) Key { return Key{Kind: "ConfigMap", Namespace: "shop", Name: name} }
	secret := func(name string) Key { return Key{Kind: "Secret", Namespace: "shop", Name: name} }
	tests := []struct {
		name string
		yaml string
		want []AutoDependency
	}{
		{
			name: "deployment pod template",
			yaml: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      serviceAccountName: web
      imagePullSecrets: [{name: registry}]
      volumes:
      - {name: config, configMap: {name: web-config}}
      - {name: opt, configMap: {name: optional-config, optional: true}}
      - {name: tls, secret: {secretName: web-tls}}
      - {name: data, persistentVolumeClaim: {claimName: web-data}}
      - name: all
        projected:
          sources:
          - configMap: {name: projected-config}
          - secret: {name: projected-secret}
      initContainers:
      - name: init
        envFrom: [{configMapRef: {name: init-env}}]
      containers:
      - name: app
        envFrom:
        - secretRef: {name: app-env}
        - secretRef: {name: optional-env, optional: true}
        env:
        - name: PASSWORD
          valueFrom: {secretKeyRef: {name: db, key: password}}
        - name: MODE
          valueFrom: {configMapKeyRef: {name: web-config, key: mode}}
        - name: PLAIN
          value: x
`,
			want: []AutoDependency{
				{Key{Kind: "ServiceAccount", Namespace: "shop", Name: "web"}, "serviceAccountName"},
				{secret("registry"), "imagePullSecrets"},
				{cm("web-config"), "volume config"},
				{secret("web-tls"), "volume tls"},
				{Key{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "web-data"}, "volume data"},
				{cm("projected-config"), "volume all"},
				{secret("projected-secret"), "volume all"},
				{cm("init-env"), "container init envFrom"},
				{secret("app-env"), "container app envFrom"},
				{secret("db"), "container app env PASSWORD"},
			},
		},
		{
			name: "cronjob job template",
			yaml: `apiVersion: batch/v1
kind: CronJob
metadata: {name: backup}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          serviceAccount: backup
          volumes: [{name: scripts, configMap: {name: backup-scripts}}]
`,
			want: []AutoDependency{
				{Key{Kind: "ServiceAccount", Namespace: "shop", Name: "backup"}, "serviceAccountName"},
				{cm("backup-scripts"), "volume scripts"},
			},
		},
		{
			name: "role binding",
			yaml: `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: web}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: web}
subjects:
- {kind: ServiceAccount, name: web}
- {kind: ServiceAccount, name: other, namespace: infra}
- {kind: User, name: alice}
`,
			want: []AutoDependency{
				{Key{Group: rbacGroup, Kind: "Role", Namespace: "shop", Name: "web"}, "roleRef"},
				{Key{Kind: "ServiceAccount", Namespace: "shop", Name: "web"}, "subjects"},
				{Key{Kind: "ServiceAccount", Namespace: "infra", Name: "other"}, "subjects"},
			},
		},
		{
			name: "cluster role binding",
			yaml: `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: web}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects:
- {kind: ServiceAccount, name: web, namespace: shop}
`,
			want: []AutoDependency{
				{Key{Group: rbacGroup, Kind: "ClusterRole", Name: "reader"}, "roleRef"},
				{Key{Kind: "ServiceAccount", Namespace: "shop", Name: "web"}, "subjects"},
			},
		},
		{
			name: "kinds without references",
			yaml: `apiVersion: example.com/v1
kind: Deployment
metadata: {name: not-apps}
spec:
  template:
    spec:
      serviceAccountName: web
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseOne(t, tt.yaml, FromTemplates)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.Auto); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
