package chart

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"k8s.io/client-go/rest"
)

// lookupAPIServer answers like an apiserver for an identity that may read Secrets in
// namespace "mine" only: discovery of v1, Secret "db" in "mine", 403 Forbidden elsewhere,
// a 500 for Secret "broken".
func lookupAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	status := func(w http.ResponseWriter, code int, reason, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
			"reason": reason, "code": code, "message": msg})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch p := r.URL.Path; {
		case p == "/api/v1":
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"secrets","namespaced":true,"kind":"Secret","verbs":["get","list"]}]}`))
		case p == "/api/v1/namespaces/mine/secrets/db":
			_, _ = w.Write([]byte(`{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db","namespace":"mine"},"data":{"password":"aHVudGVyMg=="}}`))
		case p == "/api/v1/namespaces/mine/secrets/broken":
			status(w, http.StatusInternalServerError, "InternalError", "etcd is down")
		case strings.HasPrefix(p, "/api/v1/namespaces/mine/"):
			status(w, http.StatusNotFound, "NotFound", `secrets "x" not found`)
		default:
			status(w, http.StatusForbidden, "Forbidden", `secrets is forbidden: User "system:serviceaccount:mine:deployer" cannot get resource "secrets"`)
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// TestLookupDeniedIsMissing: `lookup` of an object the render's identity may not read — one
// Secret or a list in another namespace — returns an empty result, as for a missing one
// (Helm would fail the render with the Forbidden), and says nothing of the object; an
// object it may read is returned, and other errors still fail the render.
func TestLookupDeniedIsMissing(t *testing.T) {
	cfg := lookupAPIServer(t)
	render := func(tpl string) (string, error) {
		ch := &helmchart.Chart{Metadata: &helmchart.Metadata{APIVersion: "v2", Name: "app", Version: "1.0.0"},
			Templates: []*helmchart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  found: " + tpl + "\n")}}}
		r, err := Render(ch, nil, Release{Name: "app", Namespace: "mine"}, Options{Cluster: cfg})
		if err != nil {
			return "", err
		}
		return r.Manifest, nil
	}
	for _, tt := range []struct {
		name, tpl, want, err string
	}{
		{"another namespace's Secret", `{{ (lookup "v1" "Secret" "kube-system" "db") | toJson | quote }}`, `found: "{}"`, ""},
		{"another namespace's Secrets listed", `{{ (lookup "v1" "Secret" "kube-system" "") | toJson | quote }}`, `found: "{}"`, ""},
		{"every namespace's Secrets", `{{ (lookup "v1" "Secret" "" "") | toJson | quote }}`, `found: "{}"`, ""},
		{"its own Secret", `{{ (lookup "v1" "Secret" "mine" "db").data.password | quote }}`, `found: "aHVudGVyMg=="`, ""},
		{"a missing Secret", `{{ (lookup "v1" "Secret" "mine" "gone") | toJson | quote }}`, `found: "{}"`, ""},
		{"another error fails the render", `{{ (lookup "v1" "Secret" "mine" "broken") | toJson | quote }}`, "", "etcd is down"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := render(tt.tpl)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Render = %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("manifest:\n%s\nwant %s", got, tt.want)
			}
			if strings.Contains(got, "forbidden") {
				t.Errorf("the manifest tells of the denial:\n%s", got)
			}
		})
	}
}
