//go:build unix

package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/client"
	"github.com/sealane/sealane/pkg/clusters"
	"github.com/sealane/sealane/pkg/console"
	"github.com/sealane/sealane/pkg/kube"
	"github.com/sealane/sealane/pkg/pipeline"
	"github.com/sealane/sealane/pkg/serve"
)

// consoleClients is how many browsers-worth of event-stream readers follow the deploy.
const consoleClients = 50

// BenchmarkConsoleFanout deploys a 1,000-object chart (exactly 1,000: ConfigMaps, headless
// Services, one-replica Deployments) to the sandbox through the pipeline in this process
// (embedded NATS, four stages) while the web console serves the same NATS and 50 Go HTTP
// clients follow its event stream (/api/stream), as 50 open browser tabs would. It reports
// the fan-out latency of every event to every client — from the event stored in JetStream
// (the stream's timestamp) to the client reading it — p50, p99 and max, the messages each
// client got, the clients the console dropped as slow, the Go heap in use after a GC with the
// deploy held by the console, and the process's peak RSS (the stages included: they run in
// this process). Run with -benchtime 1x.
func BenchmarkConsoleFanout(b *testing.B) {
	kubeconfig := sandboxKubeconfig(b)
	cluster, err := kube.Connect(kube.Options{Kubeconfig: kubeconfig})
	if err != nil {
		b.Fatal(err)
	}
	chartDir := writeBigChart(b, chartShape{objects: 1000, replicas: 1, exact: true, headless: true})
	for i := 0; i < b.N; i++ {
		ns := fmt.Sprintf("console-bench-%d-%d", time.Now().Unix()%100000, i)
		r := consoleFanout(b, kubeconfig, chartDir, ns)
		deleteNamespaces(b, cluster, false, ns)
		b.ReportMetric(float64(r.p50.Microseconds())/1000, "fanout-p50-ms")
		b.ReportMetric(float64(r.p99.Microseconds())/1000, "fanout-p99-ms")
		b.ReportMetric(float64(r.max.Microseconds())/1000, "fanout-max-ms")
		b.ReportMetric(float64(r.directP99.Microseconds())/1000, "follow-p99-ms")
		b.ReportMetric(float64(r.perClient), "msgs/client")
		b.ReportMetric(float64(r.dropped), "dropped-clients")
		b.ReportMetric(float64(r.heapBefore)/(1<<20), "heap-before-MB")
		b.ReportMetric(float64(r.heapAfter)/(1<<20), "heap-after-MB")
		b.ReportMetric(float64(r.peakRSS)/(1<<20), "peak-RSS-MB")
		b.ReportMetric(r.took.Seconds(), "deploy-s")
	}
}

type fanoutResult struct {
	p50, p99, max         time.Duration
	perClient, dropped    int
	heapBefore, heapAfter uint64
	peakRSS               int64
	took                  time.Duration
	directP99             time.Duration // a plain follower of the stream in this process
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// consoleFanout runs one deploy with the console and its clients.
func consoleFanout(b *testing.B, kubeconfig, chartDir, ns string) fanoutResult {
	ctx, cancel := context.WithTimeout(context.Background(), deployTimeout+3*time.Minute)
	defer cancel()
	registry := clusters.NewRegistry(kubeconfig)
	clusterName, err := registry.DefaultName()
	if err != nil {
		b.Fatal(err)
	}
	node, err := serve.Open(ctx, serve.Options{DataDir: b.TempDir(), Name: "bench-console"})
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	if _, err := registry.Get(clusterName); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	srv, url := startConsole(b, runCtx, node, &wg)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = serve.RunStages(runCtx, node.Runner(zap.NewNop()), pipeline.Deps{Blobs: node.Bus, Clusters: registry})
	}()
	direct := followDirect(b, runCtx, node, &wg) // the baseline: JetStream to a follower, no console
	readers := make([]*fanoutReader, consoleClients)
	for i := range readers {
		readers[i] = followConsole(b, runCtx, url, &wg)
	}
	heapBefore := heapInUse()
	resetPeakRSS()
	start := time.Now()
	_, err = client.Deploy(ctx, node.Bus, client.DeployRequest{ChartDir: chartDir, Release: "console-bench", Namespace: ns,
		Cluster: clusterName, Timeout: deployTimeout}, func(cloudevents.Event) {})
	if err != nil {
		b.Fatalf("deploy into %s: %v", ns, err)
	}
	took := time.Since(start)
	// Every client has read every event once the last one (release.recorded) reached each.
	waitAll(b, append(readers, direct), "release_recorded")
	r := fanoutResult{took: took, peakRSS: selfPeakRSS(), heapBefore: heapBefore, heapAfter: heapInUse(), dropped: srv.Dropped()}
	var all []time.Duration
	for _, rd := range readers {
		rd.mu.Lock()
		all = append(all, rd.latencies...)
		r.perClient = max(r.perClient, len(rd.latencies))
		rd.mu.Unlock()
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	if len(all) == 0 {
		b.Fatal("no client got an event")
	}
	r.p50, r.p99, r.max = all[len(all)/2], all[len(all)*99/100], all[len(all)-1]
	direct.mu.Lock()
	d := append([]time.Duration(nil), direct.latencies...)
	direct.mu.Unlock()
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	r.directP99 = d[len(d)*99/100]
	b.Logf("deploy %s of 1,000 objects in %s: %d clients × %d messages, fan-out p50 %s p99 %s max %s (a plain stream follower: p99 %s), %d dropped; heap %d → %d MiB, peak RSS %d MiB",
		ns, took.Round(time.Millisecond), consoleClients, r.perClient, r.p50, r.p99, r.max, r.directP99, r.dropped,
		r.heapBefore>>20, r.heapAfter>>20, r.peakRSS>>20)
	return r
}

// startConsole serves the console over node on a random loopback port.
func startConsole(b *testing.B, ctx context.Context, node *serve.Node, wg *sync.WaitGroup) (*console.Server, string) {
	opts := console.DefaultOptions()
	opts.History = 0
	srv, err := console.New(node.Bus, opts)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ctx, ln); err != nil {
			b.Errorf("console: %v", err)
		}
	}()
	return srv, "http://" + ln.Addr().String()
}

// followDirect follows the deploy stream with bus.Follow as the console does, without the
// console: stored → delivered, the part of the fan-out latency that is JetStream's.
func followDirect(b *testing.B, ctx context.Context, node *serve.Node, wg *sync.WaitGroup) *fanoutReader {
	rd := &fanoutReader{types: map[string]bool{}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// The data directory is fresh: from the first message is from the deploy's first event.
		_ = node.Bus.Follow(ctx, bus.FollowOptions{DeliverAll: true}, func(m jetstream.Msg) error {
			now := time.Now()
			md, err := m.Metadata()
			if err != nil {
				return nil
			}
			rd.mu.Lock()
			rd.latencies = append(rd.latencies, now.Sub(md.Timestamp))
			rd.types[events.Type(m.Headers().Get("ce-type")).Token()] = true
			rd.mu.Unlock()
			return nil
		})
	}()
	return rd
}

// fanoutReader is one client of the event stream: the latency of every entry it read.
type fanoutReader struct {
	mu        sync.Mutex
	latencies []time.Duration
	types     map[string]bool
}

// followConsole connects one client and reads until ctx ends; it returns once the snapshot
// arrived (the client is registered).
func followConsole(b *testing.B, ctx context.Context, url string, wg *sync.WaitGroup) *fanoutReader {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	rd := &fanoutReader{types: map[string]bool{}}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: hello") {
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer resp.Body.Close()
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "data: ") {
				continue
			}
			now := time.Now()
			stored, typ := field(line, `"stored":"`), field(line, `"type":"`)
			t, err := time.Parse(time.RFC3339Nano, stored)
			if err != nil {
				continue
			}
			rd.mu.Lock()
			rd.latencies = append(rd.latencies, now.Sub(t))
			rd.types[typ] = true
			rd.mu.Unlock()
		}
	}()
	return rd
}

// field is the string value of key in the entry of a message line: the first occurrence after
// "entry" (the entry's attributes come before its data).
func field(line, key string) string {
	e := strings.Index(line, `"entry":`)
	if e < 0 {
		return ""
	}
	i := strings.Index(line[e:], key)
	if i < 0 {
		return ""
	}
	rest := line[e+i+len(key):]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return ""
}

// waitAll waits until every reader has read an event of type typ.
func waitAll(b *testing.B, readers []*fanoutReader, typ string) {
	deadline := time.Now().Add(time.Minute)
	for _, rd := range readers {
		for {
			rd.mu.Lock()
			ok := rd.types[typ]
			rd.mu.Unlock()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("a client never got the %s event", typ)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
