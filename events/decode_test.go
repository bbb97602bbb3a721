package events

import (
	"strings"
	"testing"
)

// A malformed payload's bytes never show in the decoding error: it ends up in dead-letter
// reasons, failure events and logs.
func TestDecodeDataErrorQuotesNoValue(t *testing.T) {
	target := Target{Cluster: "c", Namespace: "n", Release: "r"}
	for name, raw := range map[string]string{
		"syntax":   `{"target": {"cluster": "c"}, "requestedBy": "canary-S3CR3T" oops}`,
		"type":     `{"target": "canary-S3CR3T"}`,
		"duration": `{"timeout": "canary-S3CR3T"}`,
	} {
		e, err := New(DeployRequested, Meta{ID: "d.requested", Source: "/t", Target: target}, RequestedData{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		e.DataEncoded = []byte(raw)
		var d RequestedData
		err = DecodeData(e, &d)
		if err == nil {
			t.Fatalf("%s: no error", name)
		}
		if strings.Contains(err.Error(), "S3CR3T") {
			t.Errorf("%s: error quotes the payload: %v", name, err)
		}
		if !strings.Contains(err.Error(), "d.requested") {
			t.Errorf("%s: error does not name the event: %v", name, err)
		}
	}
}
