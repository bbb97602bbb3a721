package bus

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

// TestWebhookStreamBoundedApartFromDeploys: the webhook audit stream keeps at most its
// WebhookMaxBytes, dropping its oldest events, so that publishing to it never fails; the deploy
// stream neither receives those events nor loses a message for them. A stream made with other
// limits is a mismatch naming them when the intake only provisions.
func TestWebhookStreamBoundedApartFromDeploys(t *testing.T) {
	e := newServerEnv(t)
	ctx := harness.Context(t, 30*time.Second)
	opts := DefaultOptions()
	opts.WebhookMaxBytes = 64 << 10
	b, err := New(ctx, e.connect("webhook"), opts, e.log)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WebhookAudit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Publish(ctx, &nats.Msg{Subject: "sealane.deploy.requested.c.n.r", Data: []byte("deploy")}, "req-1"); err != nil {
		t.Fatal(err)
	}
	audit := []byte(strings.Repeat("a", 1000))
	for i := range 500 { // 500 KB into a 64 KiB stream
		if _, err := b.PublishWebhook(ctx, &nats.Msg{Subject: "sealane.webhook.webhook_rejected._._._", Data: audit}, fmt.Sprint("a-", i)); err != nil {
			t.Fatalf("audit event %d: %v (a full webhook stream must drop its oldest, not refuse)", i, err)
		}
	}
	if _, err := b.Publish(ctx, &nats.Msg{Subject: "sealane.deploy.requested.c.n.r", Data: []byte("deploy")}, "req-2"); err != nil {
		t.Fatalf("deploy request after the audit flood: %v", err)
	}
	wh, err := b.StreamInfo(ctx, DefaultWebhookStream)
	if err != nil {
		t.Fatal(err)
	}
	if wh.State.Bytes > 64<<10 || wh.Config.Discard != jetstream.DiscardOld || wh.State.Msgs == 0 {
		t.Errorf("webhook stream holds %d bytes in %d messages (discard %v), want at most 64 KiB, oldest dropped", wh.State.Bytes, wh.State.Msgs, wh.Config.Discard)
	}
	dep, err := b.StreamInfo(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if dep.State.Msgs != 2 {
		t.Errorf("deploy stream holds %d messages, want the 2 deploy requests only", dep.State.Msgs)
	}
	// a serve that provisions with another bound names the mismatch
	other := opts
	other.WebhookMaxBytes, other.Topology = 1<<20, TopologyProvision
	b2, err := New(ctx, e.connect("webhook-2"), other, e.log)
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.WebhookAudit(ctx); !errors.Is(err, ErrTopologyMismatch) || !strings.Contains(err.Error(), "max bytes") {
		t.Errorf("WebhookAudit with another size: %v, want a mismatch naming max bytes", err)
	}
}
