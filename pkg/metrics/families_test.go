package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/metrics"
)

// lister is a JetStream with one consumer.
type lister struct{}

func (lister) Consumers(context.Context) ([]bus.ConsumerView, error) {
	return []bus.ConsumerView{{Name: "renderer"}}, nil
}

func (lister) Ping(context.Context) error { return nil }

// Families names every sealane_ family a process serves once each of its hooks ran and its
// NATS collectors are registered, with the type the page gives it.
func TestFamilies(t *testing.T) {
	m := metrics.New()
	h := m.Start("renderer", t0)
	h.Event("io.sealane.deploy.requested.v1", t0, t0)
	h.Done(nil, t0)
	m.Redelivered("renderer")
	m.DeadLettered("renderer", bus.ReasonPermanent)
	m.DeployFinished(metrics.KindInstall, "succeeded", time.Second)
	m.ResourcesApplied("created", 1)
	m.PhaseDone(metrics.StepApply, time.Second)
	m.LeaseTakenOver(true)
	m.WebhookRequest("github", "accepted")
	m.WebhookDeploys("github", 1)
	m.RolloutFinished("succeeded")
	m.ClusterResult("failed")
	m.OutboxPublished(errors.New("nats down"))
	one := func(context.Context) (int, error) { return 1, nil }
	for _, err := range []error{
		m.Register(metrics.NewConsumerCollector(lister{}, true, nil)),
		m.Register(metrics.NewCountCollector(metrics.LeaseQueuedRequests, "help", one, nil)),
		m.Register(metrics.NewCountCollector(metrics.RolloutActive, "help", one, nil)),
		m.Register(metrics.NewCountCollector(metrics.RolloutsHalted, "help", one, nil)),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]metrics.Type{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "sealane_") {
			got[f.GetName()] = metrics.Type(strings.ToLower(f.GetType().String()))
		}
	}
	if diff := cmp.Diff(got, metrics.Families()); diff != "" {
		t.Errorf("Families() (-served +listed):\n%s", diff)
	}
}
