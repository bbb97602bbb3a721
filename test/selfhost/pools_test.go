package selfhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/sealane/sealane/test/harness"
)

// poolsValues are the values of TestChartRegionalPools: two regional pools of the applier and
// tracker, eu on its region's leaf node, us-east on the chart's NATS, which is in JetStream
// domain hub.
const poolsValues = `nats:
  jetstreamDomain: hub
pools:
  - name: eu
    clusters: region=eu
    stages: [applier, tracker]
    natsURL: nats://nats-leaf.eu.example.com:4222
  - name: us-east
    clusters: region in (us-east-1,us-east-2)
    stages: [applier, tracker]
    replicas: 1
`

// TestChartRegionalPools renders the chart with values.pools: one Deployment per pool and stage
// with the pool's selector, name and NATS URL (no pool-less Deployment of a pooled stage); the
// chart's NATS, started as rendered, lets a pool's user create its pool's consumer (which the
// stage's own user may not); with nats.leafnodes the NATS listens for leaf nodes (user leaf)
// in JetStream domain hub.
func TestChartRegionalPools(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(poolsValues), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := Render(t, env.Helm, env.RepoRoot, "sealane", "-f", values)
	for _, name := range []string{"sealane-applier", "sealane-tracker"} {
		if _, ok := objs.Deployments[name]; ok {
			t.Errorf("Deployment %s rendered beside pools of its stage", name)
		}
	}
	for _, name := range []string{"sealane-renderer", "sealane-recorder"} {
		if _, ok := objs.Deployments[name]; !ok {
			t.Errorf("no Deployment %s: stages without pools stay pool-less", name)
		}
	}
	for _, want := range []struct {
		pool, selector, url string
		replicas            int32
	}{
		{"eu", "region=eu", "nats://nats-leaf.eu.example.com:4222", 2},
		{"us-east", "region in (us-east-1,us-east-2)", "nats://sealane-nats.sealane.svc:4222", 1},
	} {
		for _, stage := range []string{"applier", "tracker"} {
			name := fmt.Sprintf("sealane-%s-pool-%s", stage, want.pool)
			d, ok := objs.Deployments[name]
			if !ok {
				t.Errorf("no Deployment %s", name)
				continue
			}
			checkPoolDeployment(t, d, stage, want.pool, map[string]string{"SEALANE_CLUSTERS": want.selector, "SEALANE_POOL": want.pool,
				"SEALANE_NATS_URL": want.url, "SEALANE_NATS_USER": stage + "-pool-" + want.pool}, want.replicas)
		}
	}

	nodes := StartNATS(t, objs, "sealane-nats", "sealane", env.NATSServer)
	url := URLs(nodes)
	applierPW := objs.Secret("sealane-nats-users", "applier")
	pool := connectJS(t, url, "applier-pool-us-east", applierPW)
	ctx := harness.Context(t, time.Minute)
	if _, err := pool.CreateStream(ctx, jetstream.StreamConfig{Name: "SEALANE_DEPLOY", Subjects: []string{"sealane.deploy.>"}}); err != nil {
		t.Fatalf("the pool's user creates the deploy stream: %v", err)
	}
	consumer := jetstream.ConsumerConfig{Durable: "applier-pool-us-east", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubjects: []string{"sealane.deploy.rendered.us-east-1.*.*"}}
	if _, err := pool.CreateOrUpdateConsumer(ctx, "SEALANE_DEPLOY", consumer); err != nil {
		t.Errorf("user applier-pool-us-east creates its pool's consumer: %v", err)
	}
	consumer.Durable = "applier-pool-eu"
	if _, err := pool.CreateOrUpdateConsumer(ctx, "SEALANE_DEPLOY", consumer); err == nil {
		t.Error("user applier-pool-us-east created the consumer of pool eu")
	}
	plain := connectJS(t, url, "applier", applierPW)
	consumer.Durable = "applier-pool-us-east"
	if _, err := plain.CreateOrUpdateConsumer(ctx, "SEALANE_DEPLOY", consumer); err == nil {
		t.Error("user applier created a pool's consumer: the pool users' permissions are not needed?")
	}
	checkLeafListener(t, values)
}

// checkLeafListener renders the chart's NATS with nats.leafnodes and checks its configuration
// and environment. (The 3 nodes cannot share one leaf node port on one host: the leaf node
// itself is run against a hub in test/multicluster, TestLeafNodePools, with the same mappings.)
func checkLeafListener(t *testing.T, values string) {
	t.Helper()
	out, err := helmTemplate("-f", values, "--set", "nats.leafnodes.enabled=true", "--show-only", "templates/nats.yaml")
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	for _, want := range []string{"domain: hub", "leafnodes {\n      port: 7422\n      authorization { user: leaf, password: $LEAF_PASSWORD }",
		"- {name: leafnodes, port: 7422}", "name: LEAF_PASSWORD\n              valueFrom: {secretKeyRef: {name: sealane-nats-users, key: leaf}}"} {
		if !strings.Contains(out, want) {
			t.Errorf("the NATS render with nats.leafnodes lacks %q:\n%s", want, out)
		}
	}
}

// checkPoolDeployment checks a pool Deployment's replicas, selector and environment.
func checkPoolDeployment(t *testing.T, d *appsv1.Deployment, stage, pool string, wantEnv map[string]string, replicas int32) {
	t.Helper()
	if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
		t.Errorf("%s: replicas %v, want %d", d.Name, d.Spec.Replicas, replicas)
	}
	if got := d.Spec.Selector.MatchLabels["sealane.dev/pool"]; got != pool || d.Spec.Template.Labels["sealane.dev/pool"] != pool {
		t.Errorf("%s: selector %v, want its pool's pods only (sealane.dev/pool=%s)", d.Name, d.Spec.Selector.MatchLabels, pool)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "/sealane-"+stage {
		t.Errorf("%s: command %v, want /sealane-%s", d.Name, c.Command, stage)
	}
	got := map[string]string{}
	for _, e := range c.Env {
		got[e.Name] = e.Value
		if e.Name == "SEALANE_NATS_PASSWORD" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Key != stage) {
			t.Errorf("%s: NATS password %+v, want the %s key of the users Secret", d.Name, e.ValueFrom, stage)
		}
	}
	for k, v := range wantEnv {
		if got[k] != v {
			t.Errorf("%s: $%s = %q, want %q", d.Name, k, got[k], v)
		}
	}
}

// connectJS connects to url as user (the stage inbox prefix of the user's stage).
func connectJS(t *testing.T, url, user, password string) jetstream.JetStream {
	t.Helper()
	stage, _, _ := strings.Cut(user, "-")
	nc, err := nats.Connect(url, nats.UserInfo(user, password), nats.CustomInboxPrefix("_INBOX_"+stage))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}
