package kube

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestDryRunOnly(t *testing.T) {
	tests := []struct {
		method, url, body string
		allowed           bool
	}{
		{"GET", "/api/v1/namespaces/demo/configmaps", "", true},
		{"GET", "/api/v1/namespaces/demo/configmaps?watch=true", "", true},
		{"HEAD", "/version", "", true},
		{"PATCH", "/api/v1/namespaces/demo/configmaps/a?dryRun=All&fieldManager=sealane", "{}", true},
		{"POST", "/api/v1/namespaces/demo/configmaps?dryRun=All", "{}", true},
		{"PUT", "/api/v1/namespaces/demo/configmaps/a?dryRun=All", "{}", true},
		{"DELETE", "/api/v1/namespaces/demo/configmaps/a", `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`, true},
		{"DELETE", "/api/v1/namespaces/demo/configmaps/a?dryRun=All", "", true},
		{"PATCH", "/api/v1/namespaces/demo/configmaps/a?fieldManager=sealane", "{}", false},
		{"PATCH", "/api/v1/namespaces/demo/configmaps/a?dryRun=None", "{}", false},
		{"POST", "/api/v1/namespaces", `{"dryRun":["All"]}`, false}, // only a DELETE's body counts
		{"PUT", "/api/v1/namespaces/demo/configmaps/a", "{}", false},
		{"DELETE", "/api/v1/namespaces/demo/configmaps/a", `{"kind":"DeleteOptions","apiVersion":"v1"}`, false},
		{"DELETE", "/api/v1/namespaces/demo/configmaps/a", "", false},
		{"DELETE", "/api/v1/namespaces/demo/configmaps/a", "not json", false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.url+" "+tt.body, func(t *testing.T) {
			var sent string
			next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if r.Body != nil {
					b, _ := io.ReadAll(r.Body)
					sent = string(b)
				}
				return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
			})
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequest(tt.method, "https://cluster.example"+tt.url, body)
			if err != nil {
				t.Fatal(err)
			}
			_, err = dryRunOnly{next}.RoundTrip(req)
			switch {
			case tt.allowed && err != nil:
				t.Errorf("refused: %v", err)
			case tt.allowed && sent != tt.body:
				t.Errorf("body sent %q, want %q", sent, tt.body)
			case !tt.allowed && !errors.Is(err, ErrWriteRefused):
				t.Errorf("error = %v, want ErrWriteRefused", err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
