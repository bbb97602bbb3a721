package coordinator

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/clusterspec"
	"github.com/sealane/sealane/pkg/rollout"
)

// TestLargeFleetRecordFitsMaxPayload: the record of a 2,000-cluster rollout whose last wave
// (60 %) has just started — every cluster's state and the wave's 1,200 deploy requests in its
// outbox — is stored well under NATS's default max_payload (1 MB); as plain JSON it is 2.2 MB.
func TestLargeFleetRecordFitsMaxPayload(t *testing.T) {
	const n = 2000
	var fleet []clusterspec.Spec
	for i := range n {
		ring := map[bool]string{true: "a", false: "b"}[i < n*4/10]
		fleet = append(fleet, clusterspec.Spec{Name: fmt.Sprintf("c-%04d", i), Labels: map[string]string{"ring": ring}})
	}
	spec, err := rollout.Parse("spec.yaml", []byte(`chart: {path: chart}
release: web
namespace: "web-{{ .Cluster }}"
clusters: {selector: ""}
waves:
  - {name: first, selector: ring=a, maxParallel: 100%}
  - {name: rest, selector: ring=b, maxParallel: 100%}
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := rollout.Resolve(spec, fleet)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r := &Record{State: rollout.New("ro-12345678", plan, now), ReleaseKey: "web-{{ .Cluster }}/web", Request: events.RequestedData{
		Chart:     events.ChartSource{Ref: "nats-obj://sealane-blobs/charts/" + fmt.Sprintf("%064d", 1), Digest: fmt.Sprintf("%064d", 1)},
		InputsRef: "nats-obj://sealane-blobs/rollout-ro-12345678/inputs", Timeout: events.Duration(10 * time.Minute)}}
	for range plan.Waves {
		next, actions := rollout.Next(r.State, now)
		r.State, r.Outbox = next, nil
		if err := r.queue(actions, now); err != nil {
			t.Fatal(err)
		}
		for _, a := range actions {
			if d, ok := a.(rollout.Deploy); ok {
				if err := r.apply(rollout.ClusterDeployed{Cluster: d.Target.Cluster, Revision: 1, Attempt: d.Attempt}, now); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := encodeRecord(raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d clusters, %d outbox events: JSON %d KB, stored %d KB", n, len(r.Outbox), len(raw)>>10, len(stored)>>10)
	if len(stored) > 512<<10 {
		t.Errorf("a %d-cluster record is stored in %d KB (JSON %d KB, outbox %d events): want well under 1 MB", n, len(stored)>>10, len(raw)>>10, len(r.Outbox))
	}
	for _, value := range [][]byte{stored, raw} { // plain JSON: a record stored before
		var back Record
		if err := decodeRecord(value, &back); err != nil || len(back.Outbox) != len(r.Outbox) || len(back.State.Clusters) != n {
			t.Fatalf("decode: %v, %d outbox events, %d clusters", err, len(back.Outbox), len(back.State.Clusters))
		}
	}
}
