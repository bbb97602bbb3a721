package natsauth

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// The deploy stream's consumers are the stages' work queues — regional pools' too, whose names
// (<stage>-pool-<name>) no deny list can foresee. Readers (clients, scoped clients, audit, the
// console) read the deploy events from the stream's mirror and have no right on any consumer
// of the deploy stream: they can neither redirect a pool's consumer nor pull a stage's work.
// A scoped client follows only its own target's events.
func TestReadersCannotTouchWorkQueues(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provision(ctx, t, e)
	const pool = "applier-pool-eu"
	const poolFilter = "sealane.deploy.rendered.eu-1.>"
	prov := jsAs(t, e, "provisioner")
	if _, err := prov.CreateOrUpdateConsumer(ctx, bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: pool, FilterSubject: poolFilter, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatalf("the pool's consumer: %v", err)
	}
	if _, err := jsAs(t, e, "client").Publish(ctx, requestedA, []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}

	for _, role := range []string{"client", "client_team_a", "audit", "console"} {
		js := jsAs(t, e, role)
		_, err := js.CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
			Durable: pool, FilterSubject: "sealane.deploy.nothing.>", AckPolicy: jetstream.AckExplicitPolicy,
		})
		refused(t, e, role+" redirects a regional pool's consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+"."+pool)

		next := "$JS.API.CONSUMER.MSG.NEXT." + bus.DefaultStream + ".renderer"
		_, err = e.connect(t, role).Request(next, []byte(`{"batch":1,"expires":500000000}`), time.Second)
		refused(t, e, role+" pulls the renderer's work", err, next)

		_, err = js.OrderedConsumer(short(ctx, t), bus.DefaultStream, jetstream.OrderedConsumerConfig{})
		refused(t, e, role+" creates a consumer on the deploy stream", err, "CONSUMER.CREATE."+bus.DefaultStream+".")

		oc, err := js.OrderedConsumer(ctx, bus.DefaultMirrorStream, jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverAllPolicy, FilterSubjects: []string{"sealane.deploy.*.sandbox.team-a.>"},
		})
		if err != nil {
			t.Errorf("%s cannot follow team-a's events on the mirror: %v", role, err)
			continue
		}
		if msg, err := oc.Next(jetstream.FetchMaxWait(10 * time.Second)); err != nil || msg.Subject() != requestedA {
			t.Errorf("%s read %v, %v from the mirror; want the request", role, msg, err)
		}
	}

	// A scoped client follows its own target only.
	teamA := jsAs(t, e, "client_team_a")
	_, err := teamA.OrderedConsumer(short(ctx, t), bus.DefaultMirrorStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"sealane.deploy.*.sandbox.team-b.>"},
	})
	refused(t, e, "team-a's client follows team-b's events", err, "sandbox.team-b")
	_, err = teamA.OrderedConsumer(short(ctx, t), bus.DefaultMirrorStream, jetstream.OrderedConsumerConfig{})
	refused(t, e, "team-a's client follows every event", err, "CONSUMER.CREATE."+bus.DefaultMirrorStream)
	_, err = teamA.OrderedConsumer(short(ctx, t), bus.DefaultLogStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"sealane.logs.sandbox.team-b.>"},
	})
	refused(t, e, "team-a's client follows team-b's logs", err, "sealane.logs.sandbox.team-b")

	// The work queues are as their stages left them.
	c, err := prov.Consumer(ctx, bus.DefaultStream, pool)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.CachedInfo().Config.FilterSubject; got != poolFilter {
		t.Errorf("the pool's consumer filters %q, want %q", got, poolFilter)
	}
	r, err := prov.Consumer(ctx, bus.DefaultStream, "renderer")
	if err != nil {
		t.Fatal(err)
	}
	if info := r.CachedInfo(); info.Delivered.Consumer != 0 || info.NumPending != 1 {
		t.Errorf("the renderer's consumer delivered %d, has %d pending; want 0 and the request", info.Delivered.Consumer, info.NumPending)
	}
}
