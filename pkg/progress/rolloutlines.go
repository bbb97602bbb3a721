package progress

import (
	"fmt"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
)

func init() {
	for _, t := range []events.Type{events.RolloutStarted, events.RolloutWaveStarted, events.RolloutClusterSucceeded,
		events.RolloutClusterFailed, events.RolloutClusterSkipped, events.RolloutClusterReverted, events.RolloutWaveBaked,
		events.RolloutHalted, events.RolloutReverting, events.RolloutSucceeded, events.RolloutFailed, events.RolloutAborted,
		events.RolloutRejected} {
		lineFormats[t] = rolloutLine(t)
	}
	lineFormats[events.RolloutRequested] = lineOf(func(d events.RolloutRequestedData) string {
		return fmt.Sprintf("rollout %s requested by %s", d.RolloutID, d.RequestedBy)
	})
	lineFormats[events.RolloutCommanded] = lineOf(func(d events.RolloutCommandData) string {
		return strings.TrimSpace(fmt.Sprintf("rollout %s: %s %s%s by %s", d.RolloutID, d.Command, d.Wave, d.Cluster, d.By))
	})
	lineFormats[events.BakeRequested] = lineOf(func(d events.BakeRequestedData) string {
		return fmt.Sprintf("rollout %s: bake of revision %d (wave %s) until %s", d.RolloutID, d.Revision, d.Wave, d.Until.Format("15:04:05"))
	})
	lineFormats[events.BakeFinished] = lineOf(bakeFinishedLine)
}

// rolloutLine words a rollout progress event: "rollout ro-1: cluster_failed prod eu-2 (reason)".
func rolloutLine(t events.Type) func(cloudevents.Event) string {
	what := strings.TrimPrefix(t.Token(), "rollout_")
	return lineOf(func(d events.RolloutData) string {
		line := fmt.Sprintf("rollout %s: %s", d.RolloutID, what)
		for _, f := range []string{d.Wave, d.Cluster} {
			if f != "" {
				line += " " + f
			}
		}
		if d.Revision > 0 {
			line += fmt.Sprintf(" revision %d", d.Revision)
		}
		if d.Reason != "" {
			line += ": " + d.Reason
		}
		return line
	})
}

func bakeFinishedLine(d events.BakeFinishedData) string {
	verdict := "passed"
	switch {
	case d.Undecided:
		verdict = "undecided"
	case !d.Passed:
		verdict = "FAILED"
	}
	line := fmt.Sprintf("rollout %s: bake of revision %d %s", d.RolloutID, d.Revision, verdict)
	if d.Reason != "" {
		line += ": " + d.Reason
	}
	return line
}
