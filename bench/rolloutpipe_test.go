//go:build unix

package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/coordinator"
	"github.com/sealane/sealane/pkg/memlimit"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/serve"
	"github.com/sealane/sealane/test/harness"
)

// What the rollout benchmarks run: a standalone nats-server and `sealane serve` processes, as
// test/e2e/rollout_test.go does, each stage and the coordinator in its own process(es), so
// that each one's peak RSS can be read.

// stageNames are the pipeline's stages and the rollout coordinator, one `sealane serve NAME`
// process per replica.
var stageNames = []string{"renderer", "applier", "tracker", "recorder", "rollout"}

// benchProc is a background process whose output is kept (the last bytes shown on failure).
type benchProc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	// done is closed when the process has exited (waited for; exitErr is then set).
	done    chan struct{}
	exitErr error
}

// exited says whether p has exited, and how.
func (p *benchProc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.exitErr
	default:
		return false, nil
	}
}

func (p *benchProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out.Len() > 1<<20 {
		p.out.Reset()
	}
	return p.out.Write(b)
}

func (p *benchProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return tail(p.out.String(), 4000)
}

// startProc starts bin with args in its own process group. With
// $SEALANE_BENCH_MEMPROFILE_DIR set, a sealane process writes its heap profile at its peak
// there (SEALANE_MEMPROFILE, see cmd/sealane/profile.go), one file per process, and with
// $SEALANE_BENCH_CPUPROFILE_DIR a CPU profile of its whole run (SEALANE_CPUPROFILE). With
// $SEALANE_BENCH_MEMORY_LIMIT set (e.g. 270Mi, what a 300Mi container limit gives), every
// serve process keeps its heap under it (--memory-limit), as one in a container would.
func startProc(b *testing.B, name, bin string, args ...string) *benchProc {
	b.Helper()
	p := &benchProc{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	if len(args) > 1 && args[0] == "serve" {
		p.cmd.Env = os.Environ()
		file := strings.NewReplacer(" ", "-", "#", "").Replace(name) + ".pprof"
		if dir := os.Getenv("SEALANE_BENCH_MEMPROFILE_DIR"); dir != "" {
			p.cmd.Env = append(p.cmd.Env, "SEALANE_MEMPROFILE="+filepath.Join(dir, file))
		}
		if dir := os.Getenv("SEALANE_BENCH_CPUPROFILE_DIR"); dir != "" {
			p.cmd.Env = append(p.cmd.Env, "SEALANE_CPUPROFILE="+filepath.Join(dir, file))
		}
		if limit := os.Getenv("SEALANE_BENCH_MEMORY_LIMIT"); limit != "" {
			p.cmd.Env = append(p.cmd.Env, memlimit.Env+"="+limit)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", name, err)
	}
	go func() { p.exitErr = p.cmd.Wait(); close(p.done) }()
	return p
}

// stop ends p (SIGTERM, a SIGKILL of its group after 10 s).
func (p *benchProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// peakRSS is p's VmHWM in bytes while it runs (0 when unknown). os/exec starts children with
// vfork, but the high-water mark of /proc/PID/status belongs to the memory of the program
// exec'd, so it is the process's own (unlike the rusage of a waited child, see
// measuredCommand).
func (p *benchProc) peakRSS() int64 {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// fleetPipeline is one nats-server and the `sealane serve` processes of a benchmark variant.
type fleetPipeline struct {
	url   string
	nats  *benchProc
	procs map[string][]*benchProc // by stage name
	node  *serve.Node             // the benchmark's own client connection
	store coordinator.Store
	// maxRecord is the largest rollout record waitRollouts read, in bytes.
	maxRecord int
}

// pipelineConfig says what startFleetPipeline runs.
type pipelineConfig struct {
	sealane, kubeconfig string
	replicas            int    // of each stage and of the coordinator
	secretsNamespace    string // the cluster Secrets (on the kubeconfig's current context)
	// checkInterval is each process's --cluster-check-interval (0: 30s).
	checkInterval time.Duration
}

// startFleetPipeline starts a fresh nats-server, then cfg.replicas `sealane serve STAGE`
// processes of each stage, then as many of `serve rollout`, and connects to it. The payload
// key must be in $SEALANE_PAYLOAD_KEY (sharePayloadKey). stop ends it all.
func startFleetPipeline(b *testing.B, cfg pipelineConfig) *fleetPipeline {
	b.Helper()
	env, cleanup, err := harness.Setup(cfg.sealane)
	if err != nil {
		b.Fatal(err)
	}
	cleanup()
	port := harness.FreePort(b)
	f := &fleetPipeline{url: fmt.Sprintf("nats://127.0.0.1:%d", port), procs: map[string][]*benchProc{}}
	f.nats = startProc(b, "nats-server", env.NATSServer, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", b.TempDir())
	waitPort(b, port)
	serveArgs := []string{"--nats", f.url, "--kubeconfig", cfg.kubeconfig, "--log-level", "warn",
		"--cluster-secrets-namespace", cfg.secretsNamespace, "--cluster-check-interval", cmp.Or(cfg.checkInterval, 30*time.Second).String()}
	for _, s := range stageNames[:4] {
		for i := range cfg.replicas {
			f.procs[s] = append(f.procs[s], startProc(b, fmt.Sprintf("serve %s #%d", s, i+1), cfg.sealane, append([]string{"serve", s}, serveArgs...)...))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f.node = f.connect(ctx, b) // binds once the stages created the topology
	for i := range cfg.replicas {
		f.procs["rollout"] = append(f.procs["rollout"], startProc(b, fmt.Sprintf("serve rollout #%d", i+1), cfg.sealane, append([]string{"serve", "rollout"}, serveArgs...)...))
	}
	for {
		kv, err := coordinator.OpenBucket(ctx, f.node.Bus, false)
		if err == nil {
			f.store = coordinator.Store{KV: kv}
			return f
		}
		if ctx.Err() != nil {
			f.stop()
			b.Fatalf("the coordinator never created the rollout bucket: %v\n%s", err, f.procs["rollout"][0].output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// connect opens the benchmark's client node, retrying until the topology is there.
func (f *fleetPipeline) connect(ctx context.Context, b *testing.B) *serve.Node {
	for {
		node, err := serve.Open(ctx, serve.Options{NATSURL: f.url, Name: "bench-rollout"})
		if err == nil {
			return node
		}
		if ctx.Err() != nil {
			f.stop()
			b.Fatalf("the stages never created the topology: %v\n%s", err, f.procs["renderer"][0].output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop ends the processes (the stages first, then NATS) and the client connection.
func (f *fleetPipeline) stop() {
	if f.node != nil {
		f.node.Close()
	}
	var wg sync.WaitGroup
	for _, ps := range f.procs {
		for _, p := range ps {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop() }()
		}
	}
	wg.Wait()
	f.nats.stop()
}

// died names the first serve process that exited while the pipeline runs, with its exit
// and last output: a run with a replica gone measures something else.
func (f *fleetPipeline) died() error {
	for _, s := range stageNames {
		for _, p := range f.procs[s] {
			if gone, err := p.exited(); gone {
				return fmt.Errorf("%s exited (%v):\n%s", p.name, err, p.output())
			}
		}
	}
	return nil
}

// peakRSS is the largest VmHWM of stage s's processes, in bytes.
func (f *fleetPipeline) peakRSS(s string) int64 {
	var peak int64
	for _, p := range f.procs[s] {
		peak = max(peak, p.peakRSS())
	}
	return peak
}

// warnings counts the lines the serve processes logged (at --log-level warn: warnings and
// errors), by stage, with the first line of each stage that logged any.
func (f *fleetPipeline) warnings() string {
	var parts []string
	for _, s := range stageNames {
		n, first := 0, ""
		for _, p := range f.procs[s] {
			p.mu.Lock()
			lines := strings.Split(strings.TrimSpace(p.out.String()), "\n")
			p.mu.Unlock()
			for _, l := range lines {
				if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") {
					n++
					if first == "" {
						first = tail(l, 300)
					}
				}
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d (first: %s)", s, n, first))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// outputs are the last lines of every serve process (for a failure).
func (f *fleetPipeline) outputs() string {
	var sb strings.Builder
	for _, s := range stageNames {
		for _, p := range f.procs[s] {
			fmt.Fprintf(&sb, "--- %s:\n%s\n", p.name, p.output())
		}
	}
	return sb.String()
}

func waitPort(b *testing.B, port int) {
	b.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("nothing listens on %d", port)
}

// sharePayloadKey puts a fresh payload key in $SEALANE_PAYLOAD_KEY for this process and the
// serve processes it starts.
func sharePayloadKey(b *testing.B) {
	b.Helper()
	k, err := payload.GenerateKey()
	if err != nil {
		b.Fatal(err)
	}
	b.Setenv(payload.EnvKey, k)
}

// startRollout does what `sealane rollout start --detach -f FILE` does: parse, store the
// chart and values, publish rollout.requested. It returns the rollout id.
func (f *fleetPipeline) startRollout(ctx context.Context, file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	spec, err := rollout.Parse(file, data)
	if err != nil {
		return "", err
	}
	req, err := client.PrepareRollout(ctx, f.node.Bus, client.RolloutRequest{Spec: spec, Dir: filepath.Dir(file), RequestedBy: "bench"})
	if err != nil {
		return "", err
	}
	ev, err := events.New(events.RolloutRequested, events.Meta{ID: req.RolloutID + ".requested", Source: "/sealane/cli",
		Target: events.NoTarget, CorrelationID: req.RolloutID, Rollout: req.RolloutID, Pipeline: f.node.Bus.Options().Pipeline}, req)
	if err != nil {
		return "", err
	}
	msg, err := events.Encode(ev)
	if err != nil {
		return "", err
	}
	if _, err := f.node.Bus.Publish(ctx, msg, ev.ID()); err != nil {
		return "", err
	}
	return req.RolloutID, nil
}

// waitRollouts waits until every rollout of ids is over (or halted) and returns the latest
// time one of them finished (the coordinator's clock, same machine) and their records.
func (f *fleetPipeline) waitRollouts(ctx context.Context, ids []string) (time.Time, []*coordinator.Record, error) {
	recs := make([]*coordinator.Record, len(ids))
	for {
		done := 0
		var last time.Time
		for i, id := range ids {
			if recs[i] != nil {
				done++
				last = later(last, recs[i].State.FinishedAt)
				continue
			}
			rec, err := f.record(ctx, id)
			// Over, and its last events published (the outbox is stored before it is sent).
			if err == nil && (rec.State.Phase.Final() || rec.State.Phase == rollout.PhaseHalted) && len(rec.Outbox) == 0 {
				recs[i] = rec
				done++
				last = later(last, rec.State.FinishedAt, rec.State.UpdatedAt)
			}
		}
		if done == len(ids) {
			return last, recs, nil
		}
		if err := f.died(); err != nil {
			return time.Time{}, recs, fmt.Errorf("%d of %d rollouts over: %w", done, len(ids), err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, recs, fmt.Errorf("%d of %d rollouts over: %w", done, len(ids), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// record reads rollout id's record, noting the largest KV value of it seen: the record key's
// (the record, or the manifest of a record stored in parts) or one of its parts.
func (f *fleetPipeline) record(ctx context.Context, id string) (*coordinator.Record, error) {
	for _, key := range f.recordKeys(ctx, id) {
		if e, err := f.store.KV.Get(ctx, key); err == nil {
			f.maxRecord = max(f.maxRecord, len(e.Value()))
		}
	}
	rec, _, err := f.store.Get(ctx, id)
	return rec, err
}

// recordKeys are the keys of rollout id's record: its own and its parts' (chunks.<id>.*).
func (f *fleetPipeline) recordKeys(ctx context.Context, id string) []string {
	parts, _ := f.store.KV.Keys(ctx, "chunks."+id+".*")
	return append([]string{"rollouts." + id}, parts...)
}

func later(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// rolloutOutcome says how each rollout ended: "succeeded" when all did, else each one that
// did not, with its reason.
func rolloutOutcome(recs []*coordinator.Record) (string, bool) {
	var bad []string
	for _, r := range recs {
		if r == nil {
			bad = append(bad, "(unfinished)")
			continue
		}
		if r.State.Phase != rollout.PhaseSucceeded {
			bad = append(bad, fmt.Sprintf("%s %s: %s", r.State.ID, r.State.Phase, r.State.Reason))
		}
	}
	if len(bad) == 0 {
		return "succeeded", true
	}
	raw, _ := json.Marshal(bad)
	return string(raw), false
}
