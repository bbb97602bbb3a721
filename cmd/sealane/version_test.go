package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	run := func(args ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append([]string{"version"}, args...))
		err := root.Execute()
		return out.String(), err
	}
	text, err := run()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sealane ", "go: go1.", "helm library: v3.", "nats-server: v2."} {
		if !strings.Contains(text, want) {
			t.Errorf("version output lacks %q:\n%s", want, text)
		}
	}
	js, err := run("-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var b buildInfo
	if err := json.Unmarshal([]byte(js), &b); err != nil {
		t.Fatalf("version -o json: %v\n%s", err, js)
	}
	if b.Version == "" || !strings.HasPrefix(b.Helm, "v3.") {
		t.Errorf("version -o json = %+v", b)
	}
	if _, err := run("-o", "yaml"); err == nil || !strings.Contains(err.Error(), "text or json") {
		t.Errorf("version -o yaml: err = %v, want one naming the formats", err)
	}
}
