package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// A publish the server refuses for the user's permissions fails after one attempt, naming the
// refusal, instead of being retried until its deadline.
func TestPublishRefusedByPermissions(t *testing.T) {
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true,
		Users: []*server.User{{Username: "scoped", Password: "pw", Permissions: &server.Permissions{
			Publish: &server.SubjectPermission{Allow: []string{">"}, Deny: []string{"sealane.deploy.requested.c.other.>"}}}}}}
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := Connect(ctx, srv.ClientURL(), "scoped", nats.UserInfo("scoped", "pw"), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := New(ctx, nc, DefaultOptions(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, &nats.Msg{Subject: "sealane.deploy.requested.c.mine.r", Data: []byte("{}")}, "ok-1"); err != nil {
		t.Fatalf("an allowed publish: %v", err)
	}
	start := time.Now()
	subject := "sealane.deploy.requested.c.other.r"
	_, err = b.Publish(ctx, &nats.Msg{Subject: subject, Data: []byte("{}")}, "refused-1")
	if !errors.Is(err, ErrPublishRefused) || !strings.Contains(err.Error(), fmt.Sprintf("%q", subject)) {
		t.Fatalf("a refused publish: err = %v, want ErrPublishRefused naming the subject", err)
	}
	if took := time.Since(start); took > 2*CallTimeout {
		t.Errorf("the refused publish took %s: it was retried", took)
	}
}
