package contract_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/bus/bustest"
	"github.com/sealane/sealane/pkg/bus/contract"
	"github.com/sealane/sealane/test/harness"
)

// TestInMemory holds the in-memory implementations to the contract.
func TestInMemory(t *testing.T) {
	t.Run("blobs", func(t *testing.T) {
		b := bustest.NewBlobs()
		contract.Blobs(t, contract.BlobsSubject{Store: b, Replace: func(_ *testing.T, name string, data []byte) { b.Replace(name, data) }})
	})
	t.Run("kv", func(t *testing.T) { contract.KV(t, bustest.NewKV("contract")) })
	t.Run("pubsub", func(t *testing.T) {
		s := bustest.NewStream()
		contract.PubSub(t, contract.PubSubSubject{Publisher: s, Subject: "sealane.deploy.contract",
			Messages: func(_ *testing.T, subject string) []*nats.Msg {
				var out []*nats.Msg
				for _, m := range s.Messages() {
					if m.Subject == subject {
						out = append(out, m)
					}
				}
				return out
			}})
	})
}

// TestEmbedded holds one embedded JetStream server (bus.StartServer) to the contract.
func TestEmbedded(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) }) // after the shutdown
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: t.TempDir(), Port: -1, ServerName: "contract"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := bus.ConnectInProcess(context.Background(), srv, "contract")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	runReal(t, nc, 1)
}

// TestCluster holds a 3-node JetStream cluster, every stream and bucket with 3 replicas, to
// the contract.
func TestCluster(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, harness.NATSLeftover) })
	urls := startCluster(t, 3)
	nc, err := bus.Connect(harness.Context(t, 10*time.Second), strings.Join(urls, ","), "contract")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	runReal(t, nc, 3)
}

// runReal creates a Bus on nc with replicas and runs every suite against it.
func runReal(t *testing.T, nc *nats.Conn, replicas int) {
	t.Helper()
	opts := bus.DefaultOptions()
	opts.Replicas = replicas
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := bus.New(c, nc, opts, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatalf("new bus: %v", err)
	}
	js := b.JetStream()
	t.Run("blobs", func(t *testing.T) {
		contract.Blobs(t, contract.BlobsSubject{Store: b, Replace: func(t *testing.T, name string, data []byte) {
			c := harness.Context(t, 10*time.Second)
			sealed, err := b.Options().Sealer.Seal(b.RefOf(name), data)
			if err != nil {
				t.Fatal(err)
			}
			store, err := js.ObjectStore(c, b.Options().BlobBucket)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := store.PutBytes(c, name, sealed); err != nil {
				t.Fatalf("replace blob %s: %v", name, err)
			}
		}})
	})
	t.Run("kv", func(t *testing.T) {
		c := harness.Context(t, 10*time.Second)
		if _, err := js.CreateKeyValue(c, jetstream.KeyValueConfig{Bucket: "contract", History: 8, Replicas: replicas, Storage: jetstream.FileStorage}); err != nil {
			t.Fatal(err)
		}
		kv, err := bus.OpenKV(c, nc, "contract")
		if err != nil {
			t.Fatal(err)
		}
		contract.KV(t, kv)
	})
	t.Run("pubsub", func(t *testing.T) {
		contract.PubSub(t, contract.PubSubSubject{Publisher: b, Subject: "sealane.deploy.contract",
			Messages: func(t *testing.T, subject string) []*nats.Msg { return streamMessages(t, js, opts.Stream, subject) }})
	})
	t.Run("consumer", func(t *testing.T) {
		contract.Consumers(t, contract.ConsumerSubject{Consumer: b, Subject: "sealane.deploy.consumer"})
	})
}

// streamMessages reads the messages of stream on subject, oldest first. A read that fails (no
// responders while a cluster's consumer is placed) starts again, until 10 s have passed.
func streamMessages(t *testing.T, js jetstream.JetStream, stream, subject string) []*nats.Msg {
	t.Helper()
	c := harness.Context(t, 10*time.Second)
	for {
		out, err := readStream(c, js, stream, subject)
		if err == nil {
			return out
		}
		if c.Err() != nil {
			t.Fatalf("read %s: %v", subject, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readStream reads the messages of stream on subject through an ordered consumer.
func readStream(c context.Context, js jetstream.JetStream, stream, subject string) ([]*nats.Msg, error) {
	cons, err := js.OrderedConsumer(c, stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return nil, err
	}
	var out []*nats.Msg
	for {
		batch, err := cons.Fetch(100, jetstream.FetchMaxWait(300*time.Millisecond))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			out = append(out, &nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: m.Headers()})
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
	}
}

// startCluster starts n JetStream servers routed to one another on loopback ports and waits
// for a meta leader; they shut down when the test ends. It returns their client URLs.
func startCluster(t *testing.T, n int) []string {
	t.Helper()
	routePorts := make([]int, n)
	var routes []string
	for i := range routePorts {
		routePorts[i] = harness.FreePort(t)
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", routePorts[i]))
	}
	var servers []*server.Server
	var urls []string
	for i := range n {
		o := &server.Options{ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1, JetStream: true,
			StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "contract", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ","))}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatalf("server %d: %v", i, err)
		}
		go s.Start()
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("server %d not ready", i)
		}
		servers = append(servers, s)
		urls = append(urls, s.ClientURL())
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range servers {
			if s.JetStreamIsLeader() {
				return urls
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no JetStream meta leader after 20s")
	return nil
}
