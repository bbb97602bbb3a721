package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/test/cdschema"
	"github.com/sealane/sealane/test/harness"
)

// auditTemplates hold .Values.password in a Secret, in a werf.io/sensitive ConfigMap and in
// a werf.io/sensitive-paths field; .Values.round changes plain data so that upgrades diff.
var auditTemplates = map[string]string{
	"secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: db}
stringData:
  password: {{ .Values.password | quote }}
  dsn: {{ printf "postgres://app:%s@db:5432/app" .Values.password | quote }}
`,
	"sensitive.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: sensitive
  annotations: {werf.io/sensitive: "true"}
data:
  token: {{ .Values.password | quote }}
  round: {{ .Values.round | quote }}
`,
	"paths.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: paths
  annotations: {werf.io/sensitive-paths: "$.data.token"}
data:
  token: {{ .Values.password | quote }}
  round: {{ .Values.round | quote }}
`,
	"plain.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
data: {round: {{ .Values.round | quote }}}
`,
}

// canaryForms are the ways a secret value could leak: as is, base64 (padded, raw, URL) and hex.
func canaryForms(v string) map[string]string {
	return map[string]string{
		"plain":      v,
		"base64":     base64.StdEncoding.EncodeToString([]byte(v)),
		"base64-raw": base64.RawStdEncoding.EncodeToString([]byte(v)),
		"base64-url": base64.RawURLEncoding.EncodeToString([]byte(v)),
		"hex":        hex.EncodeToString([]byte(v)),
		"HEX":        strings.ToUpper(hex.EncodeToString([]byte(v))),
	}
}

// TestAuditCanaryAndCDEvents deploys a chart holding a canary secret value (a Secret, a
// werf.io/sensitive ConfigMap, a werf.io/sensitive-paths field, all from --set), upgrades it
// with another canary, plans a third both locally and through the pipeline, and then scans
// the whole deploy stream, the log stream, the dead letters, every CLI output, the stage
// service's logs and the audit consumer's output: no canary may appear in any form. It also
// checks the CDEvents of the deploy and its upgrade, and builds and runs
// examples/audit-consumer (so CI builds the example).
func TestAuditCanaryAndCDEvents(t *testing.T) {
	// The embedded pipeline: the stages run in the CLI process and log (at debug level) into
	// its output, which is scanned with the rest.
	sharePayloadKey(t)
	dataDir := t.TempDir()

	b := make([]byte, 6)
	_, _ = rand.Read(b)
	canary := "CANARY" + hex.EncodeToString(b)
	secrets := []string{canary + "-one", canary + "-two", canary + "-three"}
	ns := namespace(t)
	chart := writeChart(t, "audittest", auditTemplates)
	var outputs []string // every CLI output, scanned at the end
	cli := func(args ...string) result {
		t.Helper()
		r := sealane(t, dataDir, append(args, "--log-level", "debug")...)
		outputs = append(outputs, r.out)
		return r
	}

	if r := cli("deploy", chart, "--release", "audit", "--namespace", ns, "--timeout", "2m",
		"--set", "password="+secrets[0], "--set", "round=1"); r.code != 0 {
		t.Fatalf("deploy exit %d", r.code)
	}
	if r := cli("deploy", chart, "--release", "audit", "--namespace", ns, "--timeout", "2m", "-o", "json",
		"--set", "password="+secrets[1], "--set", "round=2"); r.code != 0 {
		t.Fatalf("upgrade exit %d", r.code)
	}
	// Plans print diffs: of Secrets, sensitive objects and paths only masked hashes.
	for _, extra := range [][]string{nil, {"--pipeline"}} {
		r := cli(append([]string{"plan", chart, "--release", "audit", "--namespace", ns,
			"--set", "password=" + secrets[2], "--set", "round=3"}, extra...)...)
		if r.code != 0 && r.code != 2 { // 2: changes planned
			t.Fatalf("plan %v exit %d", extra, r.code)
		}
		if !strings.Contains(r.out, "round") {
			t.Errorf("plan %v shows no diff of the plain change", extra)
		}
	}

	stream := cli("events", "-o", "json")
	logs := cli("events", "--logs", "-o", "json")
	dead := cli("events", "--dead-letters", "-o", "json")
	text := cli("events", "--release", "audit")
	for _, r := range []result{stream, logs, dead, text} {
		if r.code != 0 {
			t.Fatalf("events exit %d", r.code)
		}
	}

	// The audit consumer example builds on its own (events module + nats.go) and reports.
	bin := filepath.Join(t.TempDir(), "audit-consumer")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(repoRoot, "examples", "audit-consumer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples/audit-consumer: %v\n%s", err, out)
	}
	// The CLI is done with the store: a NATS server serves it to the consumer.
	port := harness.FreePort(t)
	start(t, "nats-server", natsBin, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", filepath.Join(dataDir, "jetstream"))
	waitTCP(t, port)
	consumer := run(t, time.Minute, bin, "--nats", fmt.Sprintf("nats://127.0.0.1:%d", port), "--follow=false")
	if consumer.code != 0 {
		t.Fatalf("audit-consumer exit %d", consumer.code)
	}
	outputs = append(outputs, consumer.out)

	// No canary anywhere.
	scanned := map[string]string{
		"deploy stream": stream.out, "log stream": logs.out, "dead letters": dead.out, "events text": text.out,
		"cli outputs and stage logs": strings.Join(outputs, "\n"),
	}
	for where, text := range scanned {
		if strings.Contains(text, canary) {
			i := strings.Index(text, canary)
			t.Errorf("%s contains the canary: …%s…", where, text[max(0, i-200):min(len(text), i+100)])
		}
		for _, s := range secrets {
			for form, v := range canaryForms(s) {
				if strings.Contains(text, v) {
					t.Errorf("%s contains secret %s in %s form", where, s, form)
				}
			}
		}
	}
	if n := strings.Count(stream.out, "\n"); n < 20 {
		t.Fatalf("the deploy stream has only %d events: scanned nothing", n)
	}

	// CDEvents: service.deployed for the install, then service.upgraded, both for audittest 0.1.0.
	var cds []events.CDEvent
	var cluster string
	for _, line := range strings.Split(stream.out, "\n") {
		var e struct {
			Type    events.Type     `json:"type"`
			ID      string          `json:"id"`
			Source  string          `json:"source"`
			Subject string          `json:"subject"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		target, err := events.ParseTarget(e.Subject)
		if err != nil || target.Release != "audit" || target.Namespace != ns {
			continue
		}
		cluster = target.Cluster
		if events.IsCDEvent(e.Type) { // as published, against the official CDEvents 0.5.1 schema
			if err := cdschema.Validate(e.Type, e.Data); err != nil {
				t.Error(err)
			}
		}
		if !events.IsCDServiceEvent(e.Type) {
			continue
		}
		var cd events.CDEvent
		if err := json.Unmarshal(e.Data, &cd); err != nil {
			t.Fatalf("CDEvent payload: %v\n%s", err, line)
		}
		if cd.Context.ID != e.ID || cd.Context.Source != e.Source || cd.Context.Type != e.Type || cd.Context.Version != events.CDEventsVersion {
			t.Errorf("CDEvent context %+v does not match its CloudEvent (%s %s %s)", cd.Context, e.ID, e.Source, e.Type)
		}
		cds = append(cds, cd)
	}
	if len(cds) != 2 || cds[0].Context.Type != events.CDServiceDeployed || cds[1].Context.Type != events.CDServiceUpgraded {
		t.Fatalf("CDEvents of release audit: %+v; want service.deployed then service.upgraded", cds)
	}
	for _, cd := range cds {
		c := cd.Subject.Content
		if c.ArtifactID != "pkg:helm/audittest@0.1.0" || c.Environment.ID != cluster+"/"+ns || cd.Subject.ID != cluster+"/"+ns+"/audit" {
			t.Errorf("CDEvent subject %+v: want artifact pkg:helm/audittest@0.1.0 in %s/%s", cd.Subject, cluster, ns)
		}
	}

	// The consumer's report: who, what, where, revision and result, and the CDEvents.
	for _, want := range []string{
		fmt.Sprintf("chart audittest 0.1.0 → %s/%s/audit revision 1: succeeded (deployed)", cluster, ns),
		fmt.Sprintf("chart audittest 0.1.0 → %s/%s/audit revision 2: succeeded (deployed)", cluster, ns),
		fmt.Sprintf("cdevent %s service %s/%s/audit in %s/%s artifact pkg:helm/audittest@0.1.0", events.CDServiceDeployed, cluster, ns, cluster, ns),
		fmt.Sprintf("cdevent %s service %s/%s/audit", events.CDServiceUpgraded, cluster, ns),
	} {
		if !strings.Contains(consumer.out, want) {
			t.Errorf("audit-consumer output lacks %q", want)
		}
	}
	if bytes.Contains([]byte(consumer.out), []byte(" by -:")) && strings.Contains(consumer.out, "revision 1") {
		for _, l := range strings.Split(consumer.out, "\n") {
			if strings.Contains(l, "/audit revision") && strings.Contains(l, " by -:") {
				t.Errorf("audit-consumer does not know who deployed: %s", l)
			}
		}
	}
}
