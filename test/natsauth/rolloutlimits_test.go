package natsauth

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/coordinator"
)

const (
	rolloutRequested = "sealane.deploy.rollout_requested._._._"
	rolloutStarted   = "sealane.deploy.rollout_started._._._"
	recordedA        = "sealane.deploy.release_recorded.sandbox.team-a.web"
)

// TestRolloutUserLimits: the rollout user, with the coordinator's bucket and consumer in place,
// cannot forge a stage's event or a pipeline answer, request a rollout, read the deploy stream
// through another consumer or take a stage's, read or write the deploy state and the leases,
// delete, purge or update a stream (its own bucket included), nor read a stage's replies.
func TestRolloutUserLimits(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provision(ctx, t, e)
	startCoordinator(ctx, t, e)
	ro := jsAs(t, e, "rollout")

	for what, subject := range map[string]string{
		"publishes deploy.rendered":     renderedA,
		"publishes release_recorded":    recordedA,
		"publishes bake_finished":       "sealane.deploy.bake_finished.sandbox.team-a.web",
		"publishes rollout_requested":   rolloutRequested,
		"publishes a stage dead letter": "sealane.deadletter.renderer",
	} {
		_, err := ro.Publish(short(ctx, t), subject, []byte("{}"))
		refused(t, e, "rollout "+what, err, subject)
	}
	_, err := ro.CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
		Durable: "renderer", FilterSubject: "sealane.deploy.>", AckPolicy: jetstream.AckExplicitPolicy,
	})
	refused(t, e, "rollout creates the renderer's consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+".renderer")
	_, err = ro.OrderedConsumer(short(ctx, t), bus.DefaultStream, jetstream.OrderedConsumerConfig{})
	refused(t, e, "rollout reads the deploy stream through another consumer", err, "CONSUMER.CREATE."+bus.DefaultStream)
	err = ro.DeleteConsumer(short(ctx, t), bus.DefaultStream, "renderer")
	refused(t, e, "rollout deletes the renderer's consumer", err, "CONSUMER.DELETE."+bus.DefaultStream+".renderer")

	deploys, err := ro.KeyValue(ctx, bus.DefaultStateBucket)
	if err != nil {
		t.Fatal(err)
	}
	_, err = deploys.Get(short(ctx, t), "some-deploy")
	refused(t, e, "rollout reads deploy state", err, "DIRECT.GET.KV_"+bus.DefaultStateBucket)
	_, err = ro.Publish(short(ctx, t), "$KV."+bus.DefaultLeaseBucket+".forged", []byte("{}"))
	refused(t, e, "rollout writes a release lease", err, "$KV."+bus.DefaultLeaseBucket+".forged")

	err = ro.DeleteStream(short(ctx, t), bus.DefaultStream)
	refused(t, e, "rollout deletes the deploy stream", err, "STREAM.DELETE."+bus.DefaultStream)
	err = ro.DeleteKeyValue(short(ctx, t), bus.DefaultRolloutBucket)
	refused(t, e, "rollout deletes its bucket", err, "STREAM.DELETE.KV_"+bus.DefaultRolloutBucket)
	s, err := ro.Stream(ctx, "KV_"+bus.DefaultRolloutBucket)
	if err != nil {
		t.Fatalf("the rollout user cannot see its bucket: %v", err)
	}
	err = s.Purge(short(ctx, t))
	refused(t, e, "rollout purges its bucket", err, "STREAM.PURGE.KV_"+bus.DefaultRolloutBucket)
	_, err = ro.UpdateStream(short(ctx, t), jetstream.StreamConfig{Name: bus.DefaultStream, Subjects: []string{bus.DefaultSubject}, MaxAge: time.Second})
	refused(t, e, "rollout updates the deploy stream", err, "STREAM.UPDATE."+bus.DefaultStream)
	sub, err := e.connect(t, "rollout").SubscribeSync("_INBOX_renderer.>")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sub.NextMsg(time.Second)
	refused(t, e, "rollout reads the renderer's replies", err, "_INBOX_renderer.>")
}

// TestRolloutClientLimits: the client user starts and commands rollouts and reads their
// records, but cannot write a record, forge the coordinator's progress, or take the
// coordinator's consumer; neither can the audit user. A client scoped to one namespace can
// neither start, command nor read rollouts: the coordinator would deploy anywhere for it.
func TestRolloutClientLimits(t *testing.T) {
	e := startNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provision(ctx, t, e)
	startCoordinator(ctx, t, e)
	client := jsAs(t, e, "client")

	// an unknown rollout's command is logged and dropped by the coordinator
	if _, err := client.Publish(ctx, "sealane.deploy.rollout_commanded._._._", []byte("{}")); err != nil {
		t.Errorf("the client cannot command a rollout: %v", err)
	}
	kv, err := bus.OpenKV(ctx, e.connect(t, "client"), bus.DefaultRolloutBucket)
	if err != nil {
		t.Fatalf("the client cannot bind the rollout bucket: %v", err)
	}
	if _, err := (coordinator.Store{KV: kv}).List(ctx); err != nil {
		t.Errorf("the client cannot list the rollouts: %v", err)
	}
	_, err = client.Publish(short(ctx, t), "$KV."+bus.DefaultRolloutBucket+".forged", []byte("{}"))
	refused(t, e, "client writes a rollout record", err, "$KV."+bus.DefaultRolloutBucket+".forged")
	_, err = client.Publish(short(ctx, t), rolloutStarted, []byte("{}"))
	refused(t, e, "client forges rollout progress", err, rolloutStarted)
	for _, role := range []string{"client", "audit"} {
		_, err = jsAs(t, e, role).CreateOrUpdateConsumer(short(ctx, t), bus.DefaultStream, jetstream.ConsumerConfig{
			Durable: coordinator.Durable, FilterSubject: "sealane.deploy.>", AckPolicy: jetstream.AckExplicitPolicy,
		})
		refused(t, e, role+" redirects the coordinator's consumer", err, "CONSUMER.CREATE."+bus.DefaultStream+".rollout")
	}

	teamA := jsAs(t, e, "client_team_a")
	_, err = teamA.Publish(short(ctx, t), rolloutRequested, []byte("{}"))
	refused(t, e, "a scoped client requests a rollout", err, rolloutRequested)
	const commanded = "sealane.deploy.rollout_commanded._._._"
	_, err = teamA.Publish(short(ctx, t), commanded, []byte("{}"))
	refused(t, e, "a scoped client commands a rollout", err, commanded)
	_, err = teamA.KeyValue(short(ctx, t), bus.DefaultRolloutBucket)
	refused(t, e, "a scoped client reads the rollouts", err, "STREAM.INFO.KV_"+bus.DefaultRolloutBucket)
}
