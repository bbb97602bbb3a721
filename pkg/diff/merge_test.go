package diff

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMergeLocally(t *testing.T) {
	tests := []struct {
		name                     string
		last, target, live, want string
	}{{
		name: "strategic: chart fields set, dropped ones removed, injected container kept",
		last: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, labels: {old: "1"}}
spec: {template: {spec: {containers: [{name: app, image: busybox:1}]}}}`,
		target: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, labels: {new: "2"}}
spec: {template: {spec: {containers: [{name: app, image: busybox:2}]}}}`,
		live: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, labels: {old: "1", controller: x}}
spec: {template: {spec: {containers: [{name: app, image: busybox:1}, {name: istio, image: proxy}]}}}
status: {active: 1}`,
		want: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, labels: {controller: x, new: "2"}}
spec: {template: {spec: {containers: [{name: app, image: busybox:2}, {name: istio, image: proxy}]}}}
status: {active: 1}`,
	}, {
		name: "JSON merge for a custom resource: lists replaced",
		target: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {sizes: [3], color: red}`,
		live: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {sizes: [1, 2], color: blue, extra: kept}`,
		want: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {sizes: [3], color: red, extra: kept}`,
	}, {
		name: "in sync",
		target: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: b}`,
		live: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: b, c: d}`,
		want: `
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {a: b, c: d}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var last *unstructured.Unstructured
			if tt.last != "" {
				last = obj(t, tt.last)
			}
			got, err := MergeLocally(last, obj(t, tt.target), obj(t, tt.live))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(obj(t, tt.want).Object, got.Object); d != "" {
				t.Errorf("MergeLocally (-want +got):\n%s", d)
			}
		})
	}
}
