package pool

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sealane/sealane/events"
)

// Consumer is a stage's durable consumer of the deploy stream as pools see it.
type Consumer struct {
	Durable  string
	Stage    events.Stage
	Pool     string // empty: the pool-less stage
	Selector string
	// Clusters are the cluster tokens its filters reach; All: every cluster.
	Clusters []string
	All      bool
}

// stageNames are the stages whose consumer, created before consumers carried metadata, is
// named after the stage.
var stageNames = []events.Stage{events.StageRenderer, events.StageApplier, events.StageTracker, events.StageRecorder}

// ConsumerOf reads a durable consumer of the deploy stream; ok is false when it is no
// stage's (an audit consumer, the rollout coordinator's).
func ConsumerOf(name string, filters []string, meta map[string]string) (c Consumer, ok bool) {
	c = Consumer{Durable: name, Stage: events.Stage(meta[MetaStage]), Pool: meta[MetaPool], Selector: meta[MetaSelector]}
	if c.Stage == "" {
		if !slices.Contains(stageNames, events.Stage(name)) {
			return c, false
		}
		c.Stage = events.Stage(name)
	}
	c.Clusters, c.All = ClustersOf(filters)
	return c, true
}

// String names the consumer for an operator.
func (c Consumer) String() string {
	if c.Pool == "" {
		return fmt.Sprintf("the pool-less %s (consumer %s, every cluster)", c.Stage, c.Durable)
	}
	return fmt.Sprintf("%s pool %q (consumer %s, --clusters %q)", c.Stage, c.Pool, c.Durable, c.Selector)
}

// Conflict is another consumer of the same stage that takes some of the clusters one wants.
type Conflict struct {
	Other Consumer
	// Clusters both take; nil when one of them takes every cluster.
	Clusters []string
}

// Conflicts returns the consumers among others of self's stage (other than self) that take
// clusters self wants: want, or every cluster when all.
func Conflicts(self Consumer, want []string, all bool, others []Consumer) []Conflict {
	want = Tokens(want)
	var out []Conflict
	for _, o := range others {
		if o.Stage != self.Stage || o.Durable == self.Durable {
			continue
		}
		switch {
		case all || o.All:
			out = append(out, Conflict{Other: o})
		default:
			if both := intersect(want, o.Clusters); len(both) > 0 {
				out = append(out, Conflict{Other: o, Clusters: both})
			}
		}
	}
	return out
}

// Tokens returns the subject tokens of cluster names, sorted: what ClustersOf reads back from
// filters (a registered cluster's name is its token; a kubeconfig context's may not be).
func Tokens(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, events.SubjectToken(n))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// intersect returns the names in both sorted lists.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); found {
			out = append(out, x)
		}
	}
	return out
}

// ConflictError refuses a stage consumer that would overlap others of its stage: two
// consumers with overlapping filters both get every event they share, so both would apply it.
type ConflictError struct {
	Self      Consumer
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var parts []string
	for _, c := range e.Conflicts {
		what := c.Other.String()
		if c.Clusters != nil {
			what += " on clusters " + strings.Join(c.Clusters, ", ")
		}
		parts = append(parts, what)
	}
	return fmt.Sprintf("%s overlaps %s: %s", e.Self, strings.Join(parts, "; "), e.advice())
}

func (e *ConflictError) advice() string {
	const del = "delete a consumer that will not run again with `sealane pools delete CONSUMER`"
	if e.Self.Pool == "" {
		return "a pool-less stage serves every cluster, so it cannot run beside pools of the stage (an event would be handled twice); " +
			"stop the pools, or start this one with --clusters; " + del
	}
	for _, c := range e.Conflicts {
		if c.Other.Pool == "" {
			return "a pool-less stage serves every cluster, so it cannot run beside pools of the stage (an event would be handled twice); " +
				"stop the pool-less " + string(e.Self.Stage) + " and " + del + ", or run this one without --clusters"
		}
	}
	return "pools of one stage must be disjoint (an event would be handled by both); change a selector, or " + del
}

// Unserved returns the clusters among registered that no consumer of stage serves (none when a
// pool-less one exists), sorted: their events wait in the stream, pending on no consumer.
func Unserved(stage events.Stage, consumers []Consumer, registered []string) []string {
	served := map[string]bool{}
	for _, c := range consumers {
		if c.Stage != stage {
			continue
		}
		if c.All {
			return nil
		}
		for _, name := range c.Clusters {
			served[name] = true
		}
	}
	var out []string
	for _, name := range registered {
		if !served[events.SubjectToken(name)] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
