package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/githook"
	"github.com/sealane/sealane/pkg/webhook"
)

const (
	benchValid   = 200
	benchInvalid = 50
	benchSecret  = "bench-secret"
)

// benchReceivers routes acme/shop's main branch to one release.
const benchReceivers = `receivers:
  - id: gh
    type: github
    secrets: [{file: %s}]
    rateLimit: {perMinute: 1000000, burst: 100000}
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c1, namespace: shop, release: shop}
`

// BenchmarkWebhookIntake sends, per op, 200 valid signed pushes (each its own delivery) and 50
// bodies just under the 3 MiB cap with a wrong signature, all at once, to the real intake
// (HTTP on loopback, the NATS sink on an in-process JetStream). It reports the time to 202 of
// the valid ones (p50, p99), the growth of the process's peak RSS over the whole run, and
// checks that every accepted delivery's request is in the stream.
func BenchmarkWebhookIntake(b *testing.B) {
	base, b2, stop := benchIntake(b)
	defer stop()
	invalid := bytes.Repeat([]byte("x"), 3<<20-1)
	resetPeakRSS() // deploy_test.go: VmHWM := the current RSS
	rssBefore := selfPeakRSS()
	var lat []time.Duration
	var mu sync.Mutex
	var accepted, refused atomic.Int64
	b.ResetTimer()
	for op := range b.N {
		var wg sync.WaitGroup
		for i := range benchValid {
			wg.Go(func() {
				body := fmt.Appendf(nil, `{"ref":"refs/heads/main","before":"%040d","after":"%040x","repository":{"full_name":"acme/shop","clone_url":"https://git.example.com/acme/shop.git"},"pusher":{"name":"bench"}}`, 0, op*benchValid+i+1)
				start := time.Now()
				code := post(base, fmt.Sprintf("bench-%d-%d", op, i), githook.SignGitHub([]byte(benchSecret), body), body)
				d := time.Since(start)
				if code == http.StatusAccepted {
					accepted.Add(1)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			})
		}
		for i := range benchInvalid {
			wg.Go(func() {
				if post(base, fmt.Sprintf("bad-%d-%d", op, i), "sha256="+strings.Repeat("0", 64), invalid) == http.StatusUnauthorized {
					refused.Add(1)
				}
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	want := int64(b.N * benchValid)
	if accepted.Load() != want || refused.Load() != int64(b.N*benchInvalid) {
		b.Fatalf("accepted %d of %d valid, refused %d of %d invalid", accepted.Load(), want, refused.Load(), b.N*benchInvalid)
	}
	if n := requestsStored(b, b2); n != want {
		b.Fatalf("%d requests in the stream, want %d: an accepted delivery was lost", n, want)
	}
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(selfPeakRSS()-rssBefore)/(1<<20), "peak-RSS-growth-MiB")
	b.ReportMetric(float64(selfPeakRSS())/(1<<20), "peak-RSS-MiB")
}

// benchIntake starts the intake; stop ends it and the NATS server.
func benchIntake(b *testing.B) (string, *bus.Bus, func()) {
	b.Helper()
	dir := b.TempDir()
	secret := filepath.Join(dir, "secret")
	cfgFile := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(secret, []byte(benchSecret), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, fmt.Appendf(nil, benchReceivers, secret), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := webhook.LoadConfig(cfgFile, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(dir, "js"), Port: 0})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nc, err := bus.ConnectInProcess(ctx, srv, "bench-webhook")
	if err != nil {
		b.Fatal(err)
	}
	log := zap.NewNop()
	bb, err := bus.New(ctx, nc, bus.DefaultOptions(), log)
	if err != nil {
		b.Fatal(err)
	}
	deliveries, err := webhook.OpenDeliveries(ctx, bb, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := bb.WebhookAudit(ctx); err != nil {
		b.Fatal(err)
	}
	// every request comes from loopback: the per-address limits would refuse the load itself
	limits := webhook.Limits{SourceRate: 1e6, SourceBurst: 1e6, GlobalRate: 1e6, GlobalBurst: 1e6, SourceBodies: 1 << 10, SourceConnections: 1 << 12}
	h, err := webhook.NewHandler(cfg, &webhook.NATSSink{Bus: bb, Deliveries: deliveries, Log: log}, log, webhook.HandlerOptions{Limits: limits})
	if err != nil {
		b.Fatal(err)
	}
	s, err := webhook.Listen(h, webhook.ServerOptions{Addr: "127.0.0.1:0"}, log)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	return "http://" + s.Addr().String(), bb, func() {
		cancel()
		<-done
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// benchClient keeps enough idle connections for the load.
var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchValid + benchInvalid}, Timeout: time.Minute}

// post sends one delivery and returns the status (0 for a transport error).
func post(base, delivery, sig string, body []byte) int {
	req, err := http.NewRequest(http.MethodPost, base+webhook.HookPrefix+"gh", bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", sig)
	resp, err := benchClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// requestsStored counts the deploy.requested events in the deploy stream.
func requestsStored(b *testing.B, bb *bus.Bus) int64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := bb.JetStream().Stream(ctx, bus.DefaultStream)
	if err != nil {
		b.Fatal(err)
	}
	si, err := s.Info(ctx, jetstream.WithSubjectFilter("sealane.deploy.requested.>"))
	if err != nil {
		b.Fatal(err)
	}
	var n uint64
	for _, c := range si.State.Subjects {
		n += c
	}
	return int64(n)
}
