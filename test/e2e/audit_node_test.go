package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/gitsource/gittest"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/test/harness"
)

// directHookReceiver is a receiver whose main-branch route deploys the pushed commit to one
// cluster, release "direct", with no rollout.
func directHookReceiver(secretFile, namespace string) string {
	return fmt.Sprintf(`  - id: github
    type: github
    secrets:
      - file: %s
    routes:
      - repository: acme/shop
        branches: [main]
        deploy:
          env: staging
          valuesFiles: [.helm/values-staging.yaml]
          set: ["image.tag={{ .ShortCommit }}"]
          cluster: sandbox-1
          namespace: %s
          release: direct
          timeout: 60s
`, secretFile, namespace)
}

// nodeRecord is one line of the Node consumer's --json output.
type nodeRecord struct {
	Kind     string `json:"kind"`
	Type     string `json:"type"`
	DeployID string `json:"deployId"`
	By       string `json:"by"`
	Verified bool   `json:"verified"`
	Chart    struct {
		Name string `json:"name"`
		Git  string `json:"git"` // the commit of a chart in a git repository
	} `json:"chart"`
	Target    events.Target  `json:"target"`
	Revision  int            `json:"revision"`
	Outcome   string         `json:"outcome"`
	RolloutID string         `json:"rolloutId"`
	Subject   string         `json:"subject"`
	Receiver  string         `json:"receiver"`
	Skipped   int            `json:"skipped"`
	Types     map[string]int `json:"types"`
	LastSeq   map[string]int `json:"lastSequence"`
}

// TestAuditConsumerNode runs examples/audit-consumer-node (JavaScript: nats.js and the
// cloudevents SDK, which reads structured mode only) against one NATS that saw a CLI deploy
// (sealane deploy --nats, signed), a webhook delivery that deploys, and a webhook delivery
// (and its redelivery) that rolls out across sandbox-1..3. The consumer must rebuild every
// event of the deploy stream's mirror and of the webhook stream from the NATS headers: the
// types and counts it reports equal those events.Decode finds in the same sequences, CDEvents,
// webhook and rollout events included, and its finished-deploy lines name each deploy's
// release, revision, result and verified requester.
func TestAuditConsumerNode(t *testing.T) {
	consumer := nodeConsumer(t)
	dir := t.TempDir()
	cliSeed, cliPub := signingKey(t, dir, "cli")
	f, cliURL := newSignedFleet(t, cliPub)
	// a follower started before any stream exists waits for them: the pipeline starts once it
	// has found none (node takes a while to start; the check must not race the pipeline)
	follower := startProcess(t, "node follower", "node", nil, consumer, "--nats", f.url, "--json")
	waitOutput(t, follower, "SEALANE_DEPLOY_MIRROR not found yet: waiting")
	gs := gittest.NewServer(t)
	repo := gs.Init(t, "shop")
	files := hookProject("node")
	files["deploy/rollout.yaml"] = fleetRolloutFile
	sha := repo.Commit(t, files, "shop with a rollout file")

	secretFile := hookSecretFile(t, dir)
	conf := fleetHookConfig(secretFile, f.suffix) + directHookReceiver(secretFile, f.namespace("sandbox-1"))
	serve, in := f.serveHooks(t, dir, repo, conf, "node-auditor: "+cliPub+"\n")

	// the fleet rollout first (the longest), then the CLI deploy and the direct webhook deploy
	fleetPush := push{receiver: "fleet", sha: sha, before: strings.Repeat("0", 40), delivery: "node-fleet-1"}
	code, a := in.send(t, fleetPush)
	if code != http.StatusAccepted || len(a.RolloutIDs) != 1 {
		t.Fatalf("fleet push: %d %+v, want 202 with one rollout id\nserve:\n%s", code, a, serve.output())
	}
	rolloutID := a.RolloutIDs[0]
	if code, again := in.send(t, fleetPush); code != http.StatusOK || again.Status != "duplicate" {
		t.Errorf("fleet redelivery: %d %+v, want 200 duplicate", code, again)
	}
	r := runWithEnv(t, 3*time.Minute, []string{"SEALANE_NATS_NKEY=" + cliSeed}, sealaneBin, "deploy", configMapChart(t),
		"--nats", cliURL, "--cluster", "sandbox-1", "--release", "cli", "--namespace", f.namespace("sandbox-1"), "--timeout", "60s")
	if r.code != 0 {
		t.Fatalf("sealane deploy --nats: exit %d\nserve:\n%s", r.code, serve.output())
	}
	code, a = in.send(t, push{receiver: "github", sha: sha, before: strings.Repeat("0", 40)})
	if code != http.StatusAccepted || len(a.DeployIDs) != 1 {
		t.Fatalf("direct push: %d %+v, want 202 with one deploy id\nserve:\n%s", code, a, serve.output())
	}
	directID := a.DeployIDs[0]
	rec := f.waitRollout(t, rolloutID, "ended", func(r *coordinator.Record) bool { return r.State.Phase.Final() })
	if rec.State.Phase != rollout.PhaseSucceeded {
		t.Fatalf("rollout %s: %s (%s)\nserve:\n%s", rolloutID, rec.State.Phase, rec.State.Reason, serve.output())
	}
	js := connectJS(t, f.url)
	waitRecorded(t, js, directID)
	waitMirrored(t, js)

	started := time.Now()
	out := run(t, 2*time.Minute, "node", consumer, "--nats", f.url, "--follow=false", "--json")
	t.Logf("the Node consumer read the streams in %s", time.Since(started).Round(time.Millisecond))
	if out.code != 0 {
		t.Fatalf("node consumer: exit %d", out.code)
	}
	records, summary := nodeRecords(t, out.out)
	goTypes, recorded := goEvents(t, js, summary.LastSeq)
	checkNodeTypes(t, summary, goTypes)
	checkNodeDeploys(t, records, recorded)
	checkNodeLines(t, f, records, rolloutID, directID)
	checkFollower(t, follower, records)
}

// checkFollower waits until the follower printed as many records as the run that read what was
// stored, and checks they are the same lines (in another order: it read both streams at once).
func checkFollower(t *testing.T, follower *process, stored []nodeRecord) {
	t.Helper()
	want := make([]string, 0, len(stored))
	for _, r := range stored {
		b, _ := json.Marshal(r)
		want = append(want, string(b))
	}
	slices.Sort(want)
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		got = got[:0]
		for _, line := range strings.Split(follower.output(), "\n") {
			if !strings.HasPrefix(line, "{") {
				continue // its one line on stderr: waiting for the streams
			}
			var r nodeRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("follower line %q: %v", line, err)
			}
			b, _ := json.Marshal(r)
			got = append(got, string(b))
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("the follower started before the pipeline printed other records:\n--- stored\n%s\n--- followed\n%s",
			strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// newSignedFleet is newFleet on a NATS that authenticates the CLI by its user nkey (the key it
// signs its requests with, registered as client key cliPub) and everything else (the stages,
// the test's readers, the Node consumer) by the password in the fleet's URL. It returns the
// fleet and the URL without credentials, for the CLI.
func newSignedFleet(t *testing.T, cliPub string) (*fleet, string) {
	t.Helper()
	sharePayloadKey(t)
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	password := hex.EncodeToString(b)
	port := harness.FreePort(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `listen: 127.0.0.1:%d
jetstream { store_dir: %q }
authorization { users: [ {nkey: %s}, {user: serve, password: %s} ] }
`, port, filepath.Join(dir, "js"), cliPub, password), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fleet{url: fmt.Sprintf("nats://serve:%s@127.0.0.1:%d", password, port), suffix: fmt.Sprintf("an%06d", mrand.IntN(1_000_000)),
		dir: t.TempDir(), secrets: fleetSecrets, home: []string{"--home-context", "sandbox-1", "--sealane-namespace", fleetSecrets}}
	start(t, "nats-server", natsBin, "-c", conf)
	waitTCP(t, port)
	t.Cleanup(func() { f.deleteNamespaces(t) })
	return f, fmt.Sprintf("nats://127.0.0.1:%d", port)
}

// nodeConsumer copies examples/audit-consumer-node to a temporary directory, installs its
// locked dependencies with npm ci there and returns its consumer.js. Node.js 20+ and npm must
// be installed: their absence fails the test.
func nodeConsumer(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: TestAuditConsumerNode needs Node.js 20 or later and npm on PATH", tool)
		}
	}
	v := run(t, time.Minute, "node", "--version")
	major, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(strings.TrimSpace(v.out), "v"), ".", 2)[0])
	if v.code != 0 || err != nil || major < 20 {
		t.Fatalf("node --version: %q (exit %d): want Node.js 20 or later", strings.TrimSpace(v.out), v.code)
	}
	src := filepath.Join(repoRoot, "examples", "audit-consumer-node")
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	var scripts []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".js") || strings.HasSuffix(name, ".json")) {
			continue // node_modules of a local install, tests, README
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".js") {
			scripts = append(scripts, filepath.Join(dst, name))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
	cmd.Dir = dst
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of examples/audit-consumer-node: %v\n%s", err, out)
	}
	for _, s := range scripts {
		if r := run(t, time.Minute, "node", "--check", s); r.code != 0 {
			t.Fatalf("node --check %s: exit %d", filepath.Base(s), r.code)
		}
	}
	// The example's own unit tests (the header mapping), run where its dependencies are.
	tests := filepath.Join(dst, "test")
	b, err := os.ReadFile(filepath.Join(src, "test", "mapping.test.js"))
	if err == nil {
		err = os.MkdirAll(tests, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(tests, "mapping.test.js"), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, time.Minute, "node", "--test", tests); r.code != 0 {
		t.Fatalf("node --test (examples/audit-consumer-node/test): exit %d", r.code)
	}
	return filepath.Join(dst, "consumer.js")
}

// nodeRecords reads the consumer's --json lines: the report records and the last, summing up.
func nodeRecords(t *testing.T, out string) ([]nodeRecord, nodeRecord) {
	t.Helper()
	var records []nodeRecord
	var summary *nodeRecord
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			if line != "" {
				t.Errorf("node consumer printed a line that is no record: %s", line)
			}
			continue
		}
		var r nodeRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("node consumer line %q: %v", line, err)
		}
		if r.Kind == "summary" {
			summary = &r
			continue
		}
		records = append(records, r)
	}
	if summary == nil {
		t.Fatalf("node consumer printed no summary:\n%s", out)
	}
	if summary.Skipped != 0 {
		t.Errorf("node consumer skipped %d messages it could not read as CloudEvents", summary.Skipped)
	}
	return records, *summary
}

// goEvents reads the mirror and the webhook stream with events.Decode up to the sequences the
// Node consumer stopped at, and returns the count of each type and the deploys' release_recorded.
func goEvents(t *testing.T, js jetstream.JetStream, last map[string]int) (map[string]int, map[string]events.RecordedData) {
	t.Helper()
	types := map[string]int{}
	recorded := map[string]events.RecordedData{}
	for _, stream := range []string{bus.DefaultMirrorStream, bus.DefaultWebhookStream} {
		if last[stream] == 0 {
			t.Fatalf("the node consumer read nothing of %s (last sequences %v)", stream, last)
		}
		ctx := harness.Context(t, time.Minute)
		oc, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint64(0); seq < uint64(last[stream]); {
			m, err := oc.Next(jetstream.FetchMaxWait(10 * time.Second))
			if err != nil {
				t.Fatalf("%s after sequence %d of %d: %v", stream, seq, last[stream], err)
			}
			md, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			seq = md.Sequence.Stream
			e, err := events.Decode(m.Headers(), m.Data())
			if err != nil {
				t.Errorf("%s sequence %d: %v", stream, seq, err)
				continue
			}
			types[e.Type()]++
			if events.Type(e.Type()) == events.ReleaseRecorded {
				var d events.RecordedData
				if err := events.DecodeData(e, &d); err != nil {
					t.Fatal(err)
				}
				recorded[events.CorrelationID(e)] = d
			}
		}
	}
	return types, recorded
}

// checkNodeTypes compares the event types (and their counts) the consumer decoded with Go's.
func checkNodeTypes(t *testing.T, summary nodeRecord, goTypes map[string]int) {
	t.Helper()
	if !maps.Equal(summary.Types, goTypes) {
		t.Errorf("event types the node consumer decoded:\n%v\nthe streams hold (events.Decode):\n%v", summary.Types, goTypes)
	}
	for _, want := range []events.Type{events.DeployRequested, events.DeployRendered, events.PhaseApplied, events.ReleaseRecorded,
		events.CDServiceDeployed, events.RolloutStarted, events.RolloutWaveStarted, events.RolloutClusterSucceeded,
		events.RolloutSucceeded, events.BakeRequested, events.BakeFinished, events.WebhookAccepted, events.WebhookDuplicate} {
		if summary.Types[string(want)] == 0 {
			t.Errorf("no %s event decoded by the node consumer (types %v)", want, slices.Sorted(maps.Keys(summary.Types)))
		}
	}
}

// checkNodeDeploys checks one deploy line per release_recorded, with its target, revision and
// outcome.
func checkNodeDeploys(t *testing.T, records []nodeRecord, recorded map[string]events.RecordedData) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range records {
		if r.Kind != "deploy" {
			continue
		}
		seen[r.DeployID] = true
		d, ok := recorded[r.DeployID]
		switch {
		case !ok:
			t.Errorf("node deploy line of %s: no release_recorded of it in the stream", r.DeployID)
		case r.Target != d.Target || r.Revision != d.Revision || r.Outcome != string(d.Outcome):
			t.Errorf("node deploy line of %s: %s revision %d %s; recorded %s revision %d %s",
				r.DeployID, r.Target, r.Revision, r.Outcome, d.Target, d.Revision, d.Outcome)
		}
	}
	for id := range recorded {
		if !seen[id] {
			t.Errorf("deploy %s was recorded but the node consumer printed no line for it", id)
		}
	}
}

// checkNodeLines checks the report of the CLI deploy, the direct webhook deploy and the
// rollout's deploys: release, revision 1, succeeded, the verified requester, and a CDEvent of
// each; and the webhook audit and rollout records.
func checkNodeLines(t *testing.T, f *fleet, records []nodeRecord, rolloutID, directID string) {
	t.Helper()
	type want struct{ cluster, release, by, chart string }
	// chart: the name of the CLI's packed chart; "" for the pushed commit's chart (git)
	wants := map[string]want{directID: {"sandbox-1", "direct", "git-webhooks", ""}}
	byRelease := map[events.Target]string{}
	for _, r := range records {
		switch {
		case r.Kind == "deploy" && r.Target.Release == "cli":
			wants[r.DeployID] = want{"sandbox-1", "cli", "node-auditor", "leased"}
		case r.Kind == "deploy" && r.RolloutID == rolloutID:
			wants[r.DeployID] = want{r.Target.Cluster, "shop", "fleet-coordinator", ""}
		case r.Kind == "cdevent" && r.Type == string(events.CDServiceDeployed):
			byRelease[events.Target{Cluster: strings.SplitN(r.Subject, "/", 2)[0], Release: r.Subject[strings.LastIndex(r.Subject, "/")+1:]}] = r.DeployID
		}
	}
	if len(wants) != 2+len(fleetClusters) {
		t.Errorf("deploy lines: %d of the CLI deploy, the webhook deploy and the rollout's %d", len(wants), len(fleetClusters))
	}
	for _, r := range records {
		w, ok := wants[r.DeployID]
		if r.Kind != "deploy" || !ok {
			continue
		}
		ns := f.namespace(w.cluster)
		if r.Target != (events.Target{Cluster: w.cluster, Namespace: ns, Release: w.release}) || r.Revision != 1 ||
			r.Outcome != string(events.OutcomeSucceeded) || r.By != w.by || !r.Verified || r.Chart.Name != w.chart || (w.chart == "") != (len(r.Chart.Git) == 40) {
			t.Errorf("node deploy line %+v: want %s/%s/%s revision 1 succeeded by %s (verified), chart %q (or a git commit)", r, w.cluster, ns, w.release, w.by, w.chart)
		}
		if byRelease[events.Target{Cluster: w.cluster, Release: w.release}] != r.DeployID {
			t.Errorf("no CDEvent service.deployed of deploy %s (%s/%s) in the node consumer's report", r.DeployID, w.cluster, w.release)
		}
	}
	kinds := map[string]int{}
	for _, r := range records {
		if r.Kind == "rollout" && r.RolloutID == rolloutID || r.Kind == "webhook" && (r.Receiver == "fleet" || r.Receiver == "github") {
			kinds[r.Kind+" "+r.Type]++
		}
	}
	for _, k := range []string{"webhook " + string(events.WebhookAccepted), "webhook " + string(events.WebhookDuplicate),
		"rollout " + string(events.RolloutStarted), "rollout " + string(events.RolloutSucceeded)} {
		if kinds[k] == 0 {
			t.Errorf("no %s record in the node consumer's report (%v)", k, kinds)
		}
	}
}

// waitRecorded waits until deploy id's release_recorded is in the deploy stream.
func waitRecorded(t *testing.T, js jetstream.JetStream, id string) {
	t.Helper()
	ctx := harness.Context(t, 2*time.Minute)
	if !eventually(ctx, 2*time.Minute, func(ctx context.Context) bool {
		oc, err := js.OrderedConsumer(ctx, bus.DefaultStream, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{events.Filter{Type: events.ReleaseRecorded}.Subject()}})
		if err != nil {
			return false
		}
		for {
			m, err := oc.Next(jetstream.FetchMaxWait(time.Second))
			if err != nil {
				return false
			}
			if e, err := events.Decode(m.Headers(), m.Data()); err == nil && events.CorrelationID(e) == id {
				return true
			}
		}
	}) {
		t.Fatalf("deploy %s was never recorded", id)
	}
}

// waitMirrored waits until the mirror holds every event of the deploy stream.
func waitMirrored(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx := harness.Context(t, time.Minute)
	var origin, mirror uint64
	if !eventually(ctx, time.Minute, func(ctx context.Context) bool {
		o, err1 := js.Stream(ctx, bus.DefaultStream)
		m, err2 := js.Stream(ctx, bus.DefaultMirrorStream)
		if err := errors.Join(err1, err2); err != nil {
			return false
		}
		origin, mirror = o.CachedInfo().State.LastSeq, m.CachedInfo().State.LastSeq
		return origin > 0 && origin == mirror
	}) {
		t.Fatalf("the mirror has %d of the deploy stream's %d events", mirror, origin)
	}
}
