// Package leasetest gives tests a release lease bucket on an embedded JetStream server.
package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// Bucket starts a JetStream server on a fresh store and returns the lease bucket
// ("sealane-leases", as bus.Bus creates it) over an in-process connection; the connection and
// the server are closed when the test ends. Register a goleak check before calling it so that
// the check runs after the shutdown.
func Bucket(t testing.TB) *bus.KV {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	nc, err := nats.Connect("", nats.InProcessServer(srv))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "sealane-leases", History: 8, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	kv, err := bus.OpenKV(ctx, nc, "sealane-leases")
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
