package natsauth

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/payload"
)

// TestTenantPayloads: a tenant uploads to its own input bucket and can neither read nor
// replace another client's uploads; no client role, nor the webhook, reads or writes what the
// stages stored (renders); a stage reads every client's uploads, and only a holder of the
// payload key opens them.
func TestTenantPayloads(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provision(ctx, t, e)
	key, err := payload.Ephemeral()
	if err != nil {
		t.Fatal(err)
	}
	// The renderer holds the payload key and publishes its public half; it stores a render.
	renderer, err := bus.New(ctx, e.connect(t, "renderer"), bus.Options{Topology: bus.TopologyBind, Sealer: key}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := renderer.PublishPublicKey(ctx, key); err != nil {
		t.Fatalf("the renderer publishes the public payload key: %v", err)
	}
	renderRef, err := renderer.PutBlob(ctx, "renders/d1", []byte("kind: Secret\nstringData: {password: team-b-secret}"))
	if err != nil {
		t.Fatal(err)
	}

	// team-a (scoped) uploads to its own bucket, sealed to the key the renderer published.
	teamA, err := bus.New(ctx, e.connect(t, "client_team_a"), bus.Options{Topology: bus.TopologyBind,
		InputBucket: bus.TenantInputBucket("team-a")}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("team-a binds: %v", err)
	}
	aRef, err := teamA.PutInput(ctx, bus.TenantInputBucket("team-a"), bus.InputsName([]byte("a")), []byte("a"))
	if err != nil {
		t.Fatalf("team-a uploads to its bucket: %v", err)
	}
	// Uploading to a bucket its user may not use fails at once, saying what to set.
	start := time.Now()
	_, err = teamA.PutInput(ctx, bus.DefaultInputBucket, bus.InputsName([]byte("b")), []byte("b"))
	if !errors.Is(err, bus.ErrPublishRefused) || !strings.Contains(err.Error(), bus.EnvInputBucket) || time.Since(start) > 20*time.Second {
		t.Errorf("team-a uploads to the shared bucket: %v after %s, want refused at once naming $%s", err, time.Since(start), bus.EnvInputBucket)
	}
	e.takeViolations()
	// The operator client uploads secret values to the shared bucket.
	operator := bindAs(ctx, t, e, "client")
	values := []byte(`{"set":["password=team-b-secret"]}`)
	opRef, err := operator.PutInput(ctx, bus.DefaultInputBucket, bus.InputsName(values), values)
	if err != nil {
		t.Fatalf("the operator client uploads: %v", err)
	}
	for _, v := range e.takeViolations() {
		t.Errorf("permission violation while uploading: %s", v)
	}

	// The stages read both (direct gets), and open them with the payload key.
	for _, ref := range []string{aRef, opRef} {
		got, err := renderer.GetBlob(ctx, ref)
		if err != nil {
			t.Fatalf("the renderer reads %s: %v", ref, err)
		}
		if ref == opRef && string(got) != string(values) {
			t.Errorf("the renderer read %q", got)
		}
	}
	// A process without the payload key opens nothing, not even what it stored.
	if _, err := operator.GetBlob(ctx, opRef); err == nil {
		t.Error("the operator client opened its sealed upload")
	}
	if _, err := key.PublicKey().Open(opRef, nil); !errors.Is(err, payload.ErrPublicOnly) {
		t.Errorf("the public key opened a payload: %v", err)
	}

	js := jsAs(t, e, "client_team_a")
	meta := func(bucket, name string) string {
		return "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	}
	_, opName, _ := bus.ParseBlobRef(opRef)
	// team-a reads the operator's upload, and replaces it.
	get := "$JS.API.DIRECT.GET.OBJ_" + bus.DefaultInputBucket + "." + meta(bus.DefaultInputBucket, opName)
	_, err = js.Conn().Request(get, nil, time.Second)
	refused(t, e, "team-a reads another client's upload", err, get)
	_, err = js.Publish(short(ctx, t), meta(bus.DefaultInputBucket, opName), []byte("{}"))
	refused(t, e, "team-a replaces another client's upload", err, meta(bus.DefaultInputBucket, opName))
	// Neither team-a, the operator client nor the webhook reads or replaces a render.
	_, renderName, _ := bus.ParseBlobRef(renderRef)
	for _, role := range []string{"client_team_a", "client", "webhook", "rollout", "audit", "console"} {
		js := jsAs(t, e, role)
		get := "$JS.API.DIRECT.GET.OBJ_" + bus.DefaultBlobBucket + "." + meta(bus.DefaultBlobBucket, renderName)
		_, err := js.Conn().Request(get, nil, time.Second)
		refused(t, e, role+" reads a render", err, get)
		_, err = js.Publish(short(ctx, t), meta(bus.DefaultBlobBucket, renderName), []byte("{}"))
		refused(t, e, role+" replaces a render", err, meta(bus.DefaultBlobBucket, renderName))
	}
	// The render is what the renderer wrote: its reference carries the digest.
	if got, err := renderer.GetBlob(ctx, renderRef); err != nil || !strings.Contains(string(got), "team-b-secret") {
		t.Errorf("render after the attempts: %q, %v", got, err)
	}
}
