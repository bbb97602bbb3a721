package chaos

import (
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"
)

// trialsPerStage is how many times each stage is killed in TestKillStage.
const trialsPerStage = 5

// slowDelay is the latency added to the killed stage's NATS traffic: every state save,
// publish and ack takes this long, so the windows between a side effect (a hook Job created,
// a release record written) and the ack that settles it are wide enough for a kill to land in.
const slowDelay = 50 * time.Millisecond

// trigger is a moment of a deploy when a stage is at work: a step of the deploy was published
// (the stage consumes it) or a hook Job appeared in the cluster (the applier created it).
type trigger struct {
	step     string // event step, or "job:<name>"
	maxDelay time.Duration
}

// triggers are the moments at which each stage is busy with a deploy of the given phases.
func triggers(stage string, phases int) []trigger {
	var out []trigger
	switch stage {
	case "renderer":
		out = append(out, trigger{"requested", 300 * time.Millisecond})
	case "recorder":
		out = append(out, trigger{"rendered", 200 * time.Millisecond}, trigger{"succeeded", 200 * time.Millisecond})
	case "applier":
		out = append(out, trigger{"started", 300 * time.Millisecond})
		for k := 0; k+1 < phases; k++ {
			out = append(out, trigger{fmt.Sprintf("phase_tracked.%d", k), 300 * time.Millisecond})
		}
	case "tracker":
		for k := range phases {
			out = append(out, trigger{fmt.Sprintf("phase_applied.%d", k), time.Second})
		}
	}
	return out
}

// pick chooses the trial's kill moment. Some trials aim at the windows where a redelivery
// could do a side effect twice or lose an event: the applier right after it created a hook
// Job (before its ack), and the applier and recorder right after they saved a state and
// before they published its events (the killed stage's link adds slowDelay each way, so a
// kill within slowDelay of the save lands before the publish).
func pick(rng *mrand.Rand, stage string, trial, phases int) trigger {
	switch {
	case stage == "applier" && trial <= len(hooks):
		return trigger{"job:" + hooks[trial-1], slowDelay * 4}
	case stage == "applier" && trial == len(hooks)+1:
		return trigger{"state:succeeded", slowDelay}
	case stage == "recorder" && trial == 1:
		return trigger{"state:recorded", slowDelay}
	case stage == "renderer" && trial == 1:
		return trigger{"state:rendered", slowDelay}
	}
	ts := triggers(stage, phases)
	return ts[rng.IntN(len(ts))]
}

// TestKillStage kills (SIGKILL) one stage's process at a random moment while it works on a
// 50-resource deploy with a pre and a post hook, starts it again, and checks the deploy's
// final state. Five trials per stage, each deploying the next revision of one release (so each
// trial also shows that the one before left nothing stuck), then one clean deploy.
func TestKillStage(t *testing.T) {
	for _, stage := range stageNames {
		t.Run(stage, func(t *testing.T) {
			t.Parallel()
			rng := seeded(t)
			p := newPipeline(t, pipelineOptions{slow: stage, slowDelay: slowDelay})
			rel := newRelease(t, p, "kill-"+stage)
			tp := newTap(t, p.url, rel.ns, rel.name)
			start := time.Now()
			warm := rel.start()
			warm.finish(t)
			if t.Failed() {
				t.FailNow()
			}
			phases := warm.run.phases()
			t.Logf("clean deploy: %d phases in %s", phases, warm.run.took.Round(time.Millisecond))
			for trial := 1; trial <= trialsPerStage; trial++ {
				tp.reset()
				tr := pick(rng, stage, trial, phases)
				delay := uniform(rng, 0, tr.maxDelay)
				down := uniform(rng, 0, time.Second)
				d := rel.start()
				hit := waitUntil(d.run, func() bool {
					if job, ok := strings.CutPrefix(tr.step, "job:"); ok {
						return len(rel.jobs.since(d.jobs, job)) > 0
					}
					return tp.has(tr.step)
				})
				if !hit || !sleepOrDone(d.run, delay) {
					t.Errorf("trial %d: the deploy ended before the kill (%s + %s)", trial, tr.step, delay)
				}
				p.stages[stage][0].kill(t)
				time.Sleep(down)
				p.stages[stage][0].start(t)
				d.finish(t)
				t.Logf("trial %d: killed %s %s after %s, down %s; revision %d deployed in %s", trial, stage,
					delay.Round(time.Millisecond), tr.step, down.Round(time.Millisecond), rel.revised, d.run.took.Round(time.Millisecond))
				if t.Failed() {
					t.FailNow()
				}
			}
			last := rel.start()
			last.finish(t)
			t.Logf("%d trials and the following deploy in %s", trialsPerStage, time.Since(start).Round(time.Second))
		})
	}
}
