package natsauth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
)

const (
	requestedA = "sealane.deploy.requested.sandbox.team-a.web"
	requestedB = "sealane.deploy.requested.sandbox.team-b.web"
	renderedA  = "sealane.deploy.rendered.sandbox.team-a.web"
)

// provision creates the topology as the renderer (a stage creates what is missing) and the
// renderer's durable consumer.
func provision(ctx context.Context, t *testing.T, e *natsEnv) {
	t.Helper()
	nc := e.connect(t, "renderer")
	if _, err := bus.New(ctx, nc, bus.Options{Topology: bus.TopologyProvision}, zap.NewNop()); err != nil {
		t.Fatalf("the renderer user cannot provision the topology: %v", err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateOrUpdateConsumer(ctx, bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "renderer", FilterSubject: "sealane.deploy.requested.>", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatalf("the renderer user cannot create its consumer: %v", err)
	}
}

// jsAs is a JetStream handle on a connection as role, with short API timeouts: a refused
// request gets no answer.
func jsAs(t *testing.T, e *natsEnv, role string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(e.connect(t, role), jetstream.WithDefaultTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// refused fails the test unless err is set and the server logged a violation on subject.
func refused(t *testing.T, e *natsEnv, what string, err error, subject string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: allowed, want refused", what)
		return
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		for _, v := range e.takeViolations() {
			if strings.Contains(v, subject) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s failed (%v) but the server logged no violation on %s", what, err, subject)
}

// short is a deadline for an operation the server should refuse: a refused request gets no
// answer, only a violation.
func short(ctx context.Context, t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// subjectCount is how many messages the deploy stream holds on subject.
func subjectCount(ctx context.Context, t *testing.T, js jetstream.JetStream, subject string) uint64 {
	t.Helper()
	s, err := js.Stream(ctx, bus.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

func TestUnauthenticatedConnectionRefused(t *testing.T) {
	e := startNATS(t)
	opts, err := bus.Auth{TLSCA: e.caPEM}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(e.url, append(opts, nats.MaxReconnects(0))...)
	if err == nil {
		nc.Close()
		t.Fatal("a connection without credentials was accepted")
	}
	if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Fatalf("error %v, want an authorization violation", err)
	}
	// Without TLS the server does not even talk.
	if nc, err := nats.Connect(strings.Replace(e.url, "tls://", "nats://", 1), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a plain-text connection was accepted")
	}
	// A key the server does not know is refused too.
	other := t.TempDir() + "/other.nk"
	write(t, other, []byte("SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU"))
	opts, err = bus.Auth{NkeyFile: other, TLSCA: e.caPEM}.Options()
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(e.url, append(opts, nats.MaxReconnects(0))...); err == nil {
		nc.Close()
		t.Fatal("an unknown nkey was accepted")
	}
}

// Each role publishes only the events its stage emits: the client cannot forge a rendered
// event, the applier cannot inject a request, and neither reaches the stream.
func TestRolesPublishOnlyTheirEvents(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	provision(ctx, t, e)
	client, applier, renderer := jsAs(t, e, "client"), jsAs(t, e, "applier"), jsAs(t, e, "renderer")

	if _, err := client.Publish(ctx, requestedA, []byte("{}")); err != nil {
		t.Fatalf("the client cannot publish a request: %v", err)
	}
	_, err := client.Publish(short(ctx, t), renderedA, []byte("{}"))
	refused(t, e, "client publishes deploy.rendered", err, renderedA)
	_, err = applier.Publish(short(ctx, t), requestedB, []byte("{}"))
	refused(t, e, "applier publishes deploy.requested", err, requestedB)
	if n := subjectCount(ctx, t, renderer, renderedA); n != 0 {
		t.Errorf("the stream holds %d forged rendered events", n)
	}
	if n := subjectCount(ctx, t, renderer, requestedB); n != 0 {
		t.Errorf("the stream holds %d requests from the applier", n)
	}
	if _, err := renderer.Publish(ctx, renderedA, []byte("{}")); err != nil {
		t.Errorf("the renderer cannot publish deploy.rendered: %v", err)
	}

	// A stage consumes only its own durable; a client cannot create or redirect one.
	_, err = applier.Consumer(short(ctx, t), bus.DefaultStream, "renderer")
	refused(t, e, "applier reads the renderer's consumer", err, "CONSUMER.INFO."+bus.DefaultStream+".renderer")
	_, err = client.CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "renderer", FilterSubject: "sealane.deploy.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	refused(t, e, "client redirects the renderer's consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+".renderer")
	// A stage's replies come on its own inbox prefix, which nobody else may read.
	sub, err := e.connect(t, "client").SubscribeSync("_INBOX_renderer.>")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sub.NextMsg(time.Second)
	refused(t, e, "client reads the renderer's replies", err, "_INBOX_renderer.>")

	// The tracker's bakes: its own durable and answers; a client can neither take its
	// requests nor forge an answer.
	tracker := jsAs(t, e, "tracker")
	const bakeFinished = "sealane.deploy.bake_finished.sandbox.team-a.web"
	if _, err := tracker.CreateOrUpdateConsumer(ctx, bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "tracker-bake", FilterSubject: "sealane.deploy.bake_requested.>", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Errorf("the tracker cannot create its bake consumer: %v", err)
	}
	if _, err := tracker.Publish(ctx, bakeFinished, []byte("{}")); err != nil {
		t.Errorf("the tracker cannot publish bake_finished: %v", err)
	}
	_, err = client.CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "tracker-bake", FilterSubject: "sealane.deploy.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	refused(t, e, "client redirects the tracker's bake consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+".tracker-bake")
	_, err = client.Publish(short(ctx, t), bakeFinished, []byte("{}"))
	refused(t, e, "client publishes bake_finished", err, bakeFinished)

	// Only serve's identities create topology; a client cannot change a stream.
	_, err = client.UpdateStream(short(ctx, t), jetstream.StreamConfig{Name: bus.DefaultStream, Subjects: []string{bus.DefaultSubject}, MaxAge: time.Second})
	refused(t, e, "client updates the deploy stream", err, "STREAM.UPDATE."+bus.DefaultStream)
}

// The audit user reads the deploy stream through an ephemeral consumer, and cannot publish,
// delete or purge anything.
func TestAuditReadsButCannotWriteOrDelete(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	provision(ctx, t, e)
	if _, err := jsAs(t, e, "client").Publish(ctx, requestedA, []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	audit := jsAs(t, e, "audit")
	oc, err := audit.OrderedConsumer(ctx, bus.DefaultMirrorStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatalf("audit cannot create an ordered consumer: %v", err)
	}
	msg, err := oc.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil || msg.Subject() != requestedA {
		t.Fatalf("audit read %v, %v; want the request", msg, err)
	}

	_, err = audit.Publish(short(ctx, t), requestedA, []byte("{}"))
	refused(t, e, "audit publishes a request", err, requestedA)
	err = audit.DeleteStream(short(ctx, t), bus.DefaultStream)
	refused(t, e, "audit deletes the deploy stream", err, "STREAM.DELETE."+bus.DefaultStream)
	err = audit.DeleteConsumer(short(ctx, t), bus.DefaultStream, "renderer")
	refused(t, e, "audit deletes the renderer's consumer", err, "CONSUMER.DELETE."+bus.DefaultStream+".renderer")
	s, err := audit.Stream(ctx, bus.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Purge(short(ctx, t))
	refused(t, e, "audit purges the deploy stream", err, "STREAM.PURGE."+bus.DefaultStream)
	_, err = audit.CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "recorder", FilterSubject: "sealane.deploy.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	refused(t, e, "audit creates the recorder's consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+".recorder")
	if n := subjectCount(ctx, t, audit, requestedA); n != 1 {
		t.Errorf("the stream holds %d requests, want the client's one", n)
	}
}

// A client scoped to cluster sandbox, namespace team-a (CLIENT_TEAM_A) requests deploys there
// and nowhere else: NATS refuses team-b.
func TestScopedClientCannotTargetAnotherNamespace(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	provision(ctx, t, e)
	teamA := jsAs(t, e, "client_team_a")
	if _, err := teamA.Publish(ctx, requestedA, []byte("{}")); err != nil {
		t.Fatalf("team-a's client cannot request a deploy into team-a: %v", err)
	}
	_, err := teamA.Publish(short(ctx, t), requestedB, []byte("{}"))
	refused(t, e, "team-a's client requests a deploy into team-b", err, requestedB)
	other := "sealane.deploy.requested.prod.team-a.web"
	_, err = teamA.Publish(short(ctx, t), other, []byte("{}"))
	refused(t, e, "team-a's client requests a deploy on another cluster", err, other)
	if n := subjectCount(ctx, t, teamA, requestedB); n != 0 {
		t.Errorf("the stream holds %d team-b requests", n)
	}
}

// Only serve's identities create topology, and none of the stages can change it: a stage
// configured differently is refused with both values, cannot force the change, and the
// provisioner identity can (serve --update-topology). A client binds and creates nothing.
func TestTopologyBelongsToServe(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := zap.NewNop()
	_, err := bus.New(ctx, e.connect(t, "client"), bus.Options{Topology: bus.TopologyBind}, log)
	if !errors.Is(err, bus.ErrNoTopology) {
		t.Fatalf("client before serve: %v, want ErrNoTopology", err)
	}
	provision(ctx, t, e)
	if _, err := bus.New(ctx, e.connect(t, "client"), bus.Options{Topology: bus.TopologyBind}, log); err != nil {
		t.Fatalf("the client cannot bind: %v", err)
	}
	if _, err := bus.New(ctx, e.connect(t, "audit"), bus.Options{Topology: bus.TopologyBind}, log); err != nil {
		t.Fatalf("the audit user cannot bind: %v", err)
	}
	day := bus.Options{Topology: bus.TopologyProvision, MaxAge: 24 * time.Hour}
	_, err = bus.New(ctx, e.connect(t, "applier"), day, log)
	if !errors.Is(err, bus.ErrTopologyMismatch) || !strings.Contains(err.Error(), "720h0m0s") || !strings.Contains(err.Error(), "24h0m0s") {
		t.Fatalf("applier with another retention: %v, want a mismatch naming 720h and 24h", err)
	}
	day.Topology = bus.TopologyCreateOrUpdate
	_, err = bus.New(short(ctx, t), e.connect(t, "applier"), day, log)
	refused(t, e, "applier updates the deploy stream", err, "STREAM.UPDATE."+bus.DefaultStream)
	if _, err := bus.New(ctx, e.connect(t, "provisioner"), day, log); err != nil {
		t.Fatalf("the provisioner cannot update the topology: %v", err)
	}
	s, err := jsAs(t, e, "audit").Stream(ctx, bus.DefaultStream)
	if err != nil || s.CachedInfo().Config.MaxAge != 24*time.Hour {
		t.Fatalf("after the provisioner's update: %v, %v", s, err)
	}
}
