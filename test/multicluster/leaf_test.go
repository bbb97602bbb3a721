//go:build multicluster

package multicluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/test/harness"
)

// leafRelease is the release TestLeafNodePools rolls out.
const leafRelease = "leafpool"

// poolTypes are the event types the applier and tracker pools publish.
var poolTypes = []events.Type{events.DeployStarted, events.PhaseApplied, events.ResourceProgressed, events.PhaseTracked, events.DeploySucceeded}

// TestLeafNodePools runs regional pools on a real NATS topology on loopback: a hub nats-server
// with JetStream (stream, KV, Object Store) where the renderer, recorder and rollout coordinator
// connect, and a leaf-node nats-server per region without JetStream where the region's pool
// (`serve applier tracker --clusters region=R`) connects: eu = sandbox-1 and sandbox-2, us =
// sandbox-3. A rollout in two waves (us, then eu) succeeds with each pool handling only its
// clusters' events, although the eu leaf's process is SIGKILLed while the eu deploys are in
// flight (the first eu deploy started) and started again on the same port: the eu pool
// reconnects, every deploy's events are complete, and nothing is dead-lettered.
func TestLeafNodePools(t *testing.T) {
	e, env := newPoolsBase(t, "sandbox-1", "sandbox-2", "sandbox-3")
	for c, region := range map[string]string{"sandbox-1": "eu", "sandbox-2": "eu", "sandbox-3": "us"} {
		e.label(c, "region", region)
	}
	tp := startTopology(t, env.NATSServer, "eu", "us")
	e.url = tp.hubURL
	e.setCommon()
	tap := tapEvents(t, tp.hubURL)
	central := start(t, "renderer+recorder+rollout", e.bin, append([]string{"serve", "renderer", "recorder", "rollout", "--log-level", "debug"}, e.common...)...)
	eu, us := e.poolOn("eu", "region=eu", tp.leaf("eu").URL()), e.poolOn("us", "region=us", tp.leaf("us").URL())
	e.waitServing(eu)
	e.waitServing(us)
	e.waitBucket(central, bus.DefaultRolloutBucket)

	euStarted := tap.first(events.Filter{Type: events.DeployStarted, Cluster: "sandbox-1"}.Subject())
	done := make(chan result, 1)
	go func() { done <- e.rollout(e.leafSpec(), 8*time.Minute) }()
	var killedAt time.Time
	select {
	case killedAt = <-euStarted:
	case r := <-done:
		t.Fatalf("the rollout ended before an eu deploy started: exit %d\n%s", r.code, r.out)
	case <-time.After(5 * time.Minute):
		t.Fatal("no eu deploy started within 5 minutes")
	}
	oldPort := tp.connectedLeaves()["eu"]
	tp.kill("eu")
	t.Logf("eu leaf SIGKILLed %s after the first eu deploy started", time.Since(killedAt).Round(time.Millisecond))
	killedAt = time.Now()
	tp.restart("eu")
	restarted := time.Now()
	tp.waitReconnected(time.Minute, "eu", oldPort)
	leafBack := time.Now()

	r := <-done
	if r.code != 0 {
		t.Fatalf("rollout start: exit %d\n%s", r.code, r.out)
	}
	// Both eu deploys were in flight at the kill: each cluster's later steps were handled by
	// the eu pool on its new connections.
	var first seen
	for _, c := range []string{"sandbox-1", "sandbox-2"} {
		var filters []string
		for _, typ := range poolTypes {
			filters = append(filters, events.Filter{Type: typ, Cluster: c}.Subject())
		}
		s, ok := tap.after(restarted, filters...)
		if !ok {
			t.Fatalf("the eu pool published no event of %s after its leaf came back", c)
		}
		if first.at.IsZero() || s.at.Before(first.at) {
			first = s
		}
	}
	t.Logf("eu leaf: process started again %s after the kill, reconnected to the hub %s later; first eu pool event %s after the kill (%s)",
		restarted.Sub(killedAt).Round(time.Millisecond), leafBack.Sub(restarted).Round(time.Millisecond),
		first.at.Sub(killedAt).Round(time.Millisecond), first.subject)

	rec := e.rolloutRecord(rolloutID(t, r.out))
	if rec.State.Phase != rollout.PhaseSucceeded {
		t.Fatalf("rollout phase %s (%s)", rec.State.Phase, rec.State.Reason)
	}
	for _, m := range e.ms {
		e.wantRelease(m, leafRelease, true)
	}
	checkHandled(t, map[string]*process{"eu": eu, "us": us}, map[string][]string{"eu": {"sandbox-1", "sandbox-2"}, "us": {"sandbox-3"}})
	e.checkDeployEvents(rec.State.ID)
	e.checkNoDeadLetters()
}

// checkHandled checks that each pool's process handled events of each of its clusters (want)
// and of no other cluster.
func checkHandled(t *testing.T, pools map[string]*process, want map[string][]string) {
	t.Helper()
	for pool, p := range pools {
		got := handled(p)
		t.Logf("events handled by the %s pool: %v", pool, got)
		for c, n := range got {
			if !slices.Contains(want[pool], c) {
				t.Errorf("the %s pool handled %d events of %s, not one of its clusters %v", pool, n, c, want[pool])
			}
		}
		for _, c := range want[pool] {
			if got[c] == 0 {
				t.Errorf("the %s pool handled no event of its cluster %s", pool, c)
			}
		}
	}
}

// leafSpec writes the rollout spec of TestLeafNodePools: the fleet chart (with its Helm
// test), wave us (sandbox-3, baked 2 s), then wave eu (sandbox-1 and sandbox-2 at once).
func (e *poolsEnv) leafSpec() string {
	chart := filepath.Join(e.root, "test", "e2e", "testdata", "fleet")
	text := fmt.Sprintf(`chart: {path: %s}
release: %s
namespace: %s
timeout: 2m
clusters: {selector: "region in (eu,us)"}
waves:
  - {name: us, selector: region=us, bakeTime: 2s}
  - {name: eu, selector: region=eu, maxParallel: 2}
`, chart, leafRelease, e.ns)
	path := filepath.Join(e.t.TempDir(), "rollout.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return path
}

// rollout runs `sealane rollout start -f spec` to the rollout's end.
func (e *poolsEnv) rollout(spec string, timeout time.Duration) result {
	return run(e.t, timeout, e.bin, "rollout", "start", "-f", spec, "--nats", e.url, "--home-kubeconfig", homeKubeconfig(e.t),
		"--home-context", "sandbox-1", "--sealane-namespace", e.secretsNS)
}

// waitBucket waits until the KV bucket exists (p created it).
func (e *poolsEnv) waitBucket(p *process, bucket string) {
	e.t.Helper()
	if !eventually(time.Minute, func() bool {
		ctx := harness.Context(e.t, 10*time.Second)
		nc, err := bus.Connect(ctx, e.url, "leaf-test")
		if err != nil {
			return false
		}
		defer nc.Close()
		_, err = bus.OpenKV(ctx, nc, bucket)
		return err == nil
	}) {
		e.t.Fatalf("%s never created bucket %s:\n%s", p.name, bucket, p.output())
	}
}

// rolloutRecord reads rollout id's record.
func (e *poolsEnv) rolloutRecord(id string) *coordinator.Record {
	e.t.Helper()
	ctx := harness.Context(e.t, 30*time.Second)
	nc, err := bus.Connect(ctx, e.url, "leaf-test")
	if err != nil {
		e.t.Fatal(err)
	}
	defer nc.Close()
	kv, err := bus.OpenKV(ctx, nc, bus.DefaultRolloutBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	rec, _, err := coordinator.Store{KV: kv}.Get(ctx, id)
	if err != nil {
		e.t.Fatalf("rollout %s: %v", id, err)
	}
	return rec
}

// deployChain is the sequence every successful deploy leaves in the stream, in order.
var deployChain = []events.Type{events.DeployRequested, events.DeployRendered, events.DeployStarted, events.PhaseApplied,
	events.DeploySucceeded, events.ReleaseRecorded}

// checkDeployEvents reads the stream (`sealane events`) and checks every deploy of rollout id:
// each cluster has at least one, each holds the whole deployChain in order, and none failed.
func (e *poolsEnv) checkDeployEvents(id string) {
	e.t.Helper()
	r := run(e.t, time.Minute, e.bin, "events", "--nats", e.url, "--namespace", e.ns, "-o", "json")
	if r.code != 0 {
		e.t.Fatalf("sealane events: exit %d\n%s", r.code, r.out)
	}
	byDeploy := map[string][]events.Type{}
	clusterOf := map[string]string{}
	for _, line := range strings.Split(r.out, "\n") {
		var ev cloudevents.Event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		typ := events.Type(ev.Type())
		if ro, _ := ev.Extensions()[events.ExtRollout].(string); ro != id || !deployEvent(typ) {
			continue
		}
		deploy, _ := ev.Extensions()[events.ExtCorrelationID].(string)
		target, err := events.TargetOf(ev)
		if deploy == "" || err != nil {
			continue
		}
		byDeploy[deploy] = append(byDeploy[deploy], typ)
		clusterOf[deploy] = target.Cluster
	}
	perCluster := map[string]int{}
	for deploy, types := range byDeploy {
		perCluster[clusterOf[deploy]]++
		if slices.Contains(types, events.DeployFailed) {
			e.t.Errorf("deploy %s on %s failed: %v", deploy, clusterOf[deploy], tokens(types))
			continue
		}
		if !inOrder(types, deployChain) {
			e.t.Errorf("deploy %s on %s: events %v lack %v in order", deploy, clusterOf[deploy], tokens(types), tokens(deployChain))
		}
	}
	for deploy, types := range byDeploy {
		e.t.Logf("deploy %s on %s: %v", deploy, clusterOf[deploy], tokens(types))
	}
	for _, m := range e.ms {
		if perCluster[m.context] == 0 {
			e.t.Errorf("no deploy of rollout %s on %s in the stream", id, m.context)
		}
	}
}

// checkNoDeadLetters fails the test when any stage gave up on a message.
func (e *poolsEnv) checkNoDeadLetters() {
	e.t.Helper()
	r := run(e.t, time.Minute, e.bin, "events", "--nats", e.url, "--dead-letters", "-o", "json")
	if r.code != 0 || strings.TrimSpace(r.out) != "" {
		e.t.Errorf("dead letters (exit %d):\n%s", r.code, r.out)
	}
}

// deployEvent reports whether t is an event of a deploy's own sequence (not a rollout's or a
// bake's).
func deployEvent(t events.Type) bool {
	return strings.HasPrefix(string(t), "dev.sealane.deploy.") || t == events.ReleaseRecorded
}

// inOrder reports whether want is a subsequence of got.
func inOrder(got, want []events.Type) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

func tokens(ts []events.Type) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Token()
	}
	return out
}

// rolloutID reads the id `rollout start` printed.
func rolloutID(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "rollout "); ok && strings.Contains(rest, " requested") {
			return strings.Fields(rest)[0]
		}
	}
	t.Fatalf("no rollout id in:\n%s", out)
	return ""
}
