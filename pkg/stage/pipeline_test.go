package stage

import (
	"context"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
)

// Processes sharing one NATS with private pipelines (the CLI's embedded mode) each handle their
// own deploys only, with consumers of their own; the events they emit stay in their pipeline;
// the shared pipeline handles the deploys of no private one.
func TestPrivatePipelinesHandleTheirOwnDeploys(t *testing.T) {
	e := newEnv(t)
	private := func(name string) *bus.Bus {
		opts := bus.DefaultOptions()
		opts.Pipeline = name
		b, _ := e.newBusWith(name, opts)
		return b
	}
	buses := map[string]*bus.Bus{"local-a": private("local-a"), "local-b": private("local-b"), "": e.bus}
	handlers := map[string]*handlerLog{}
	var runs []*running
	for name, b := range buses {
		h := &handlerLog{fn: emitting(events.DeployRendered, "rendered")}
		handlers[name] = h
		runs = append(runs, e.start(&Runner{Bus: b, Log: e.log}, Stage{Name: events.StageRenderer, Types: []events.Type{events.DeployRequested}, Handler: h}, false))
	}
	for _, p := range []string{"local-a", "local-b", ""} {
		ev := newEvent(t, events.DeployRequested, "dep"+p, "requested", events.RequestedData{Target: target})
		if p != "" {
			ev.SetExtension(events.ExtPipeline, p)
		}
		e.publishEvent(ev, ev.ID())
	}
	for _, p := range []string{"local-a", "local-b", ""} {
		ms := e.waitStored(bus.DefaultStream, "dep"+p+".rendered")
		if got := events.PipelineOf(withID(ms, "dep"+p+".rendered")[0].Event); got != p {
			t.Errorf("rendered event of dep%s: pipeline %q, want %q", p, got, p)
		}
	}
	e.waitFor(waitTimeout, "every renderer to settle", func() bool {
		return e.consumerInfo("renderer-local-a").NumAckPending == 0 && e.consumerInfo("renderer-local-b").NumAckPending == 0
	})
	for p, h := range handlers {
		ins := h.inputs()
		if len(ins) != 1 || ins[0].DeployID != "dep"+p {
			ids := []string{}
			for _, in := range ins {
				ids = append(ids, in.DeployID)
			}
			t.Errorf("pipeline %q handled %v; want only dep%s", p, ids, p)
		}
	}
	info := e.consumerInfo("renderer-local-a")
	if info.Config.InactiveThreshold == 0 || info.Config.DeliverPolicy.String() == "all" || info.Config.AckWait != 10*time.Second {
		t.Errorf("private consumer config: inactive threshold %s, deliver %s, ack wait %s; want reaped when unused, starting with its bus, 10s",
			info.Config.InactiveThreshold, info.Config.DeliverPolicy, info.Config.AckWait)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, x := range runs {
		_ = x.stop()
	}
	if err := buses["local-a"].Forget(ctx); err != nil {
		t.Fatal(err)
	}
	if e.consumerInfo("renderer-local-a") != nil || e.consumerInfo("renderer-local-b") == nil {
		t.Error("Forget: want local-a's consumer gone and local-b's kept")
	}
}
