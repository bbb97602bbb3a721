package main

import (
	"bytes"
	"testing"
)

func TestWriteValues(t *testing.T) {
	vals := map[string]any{"image": map[string]any{"tag": "1.0"}, "replicas": 2}
	for _, tc := range []struct {
		all    bool
		output string
		want   string
	}{
		{false, "table", "USER-SUPPLIED VALUES:\nimage:\n  tag: \"1.0\"\nreplicas: 2\n"},
		{true, "table", "COMPUTED VALUES:\nimage:\n  tag: \"1.0\"\nreplicas: 2\n"},
		{false, "yaml", "image:\n  tag: \"1.0\"\nreplicas: 2\n"},
		{false, "json", "{\"image\":{\"tag\":\"1.0\"},\"replicas\":2}\n"},
	} {
		var b bytes.Buffer
		if err := writeValues(&b, vals, tc.all, tc.output); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("all=%v -o %s =\n%q\nwant\n%q", tc.all, tc.output, b.String(), tc.want)
		}
	}
	// No values at all print as helm prints them.
	var b bytes.Buffer
	_ = writeValues(&b, nil, false, "table")
	if b.String() != "USER-SUPPLIED VALUES:\nnull\n" {
		t.Errorf("no values = %q", b.String())
	}
}
