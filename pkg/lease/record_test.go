package lease

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sealane/sealane/events"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	live := &Record{DeployID: "a", Acquired: now.Add(-time.Minute), Expires: now.Add(time.Minute)}
	expired := &Record{DeployID: "a", Acquired: now.Add(-3 * time.Minute), Expires: now.Add(-time.Second)}
	atExpiry := &Record{DeployID: "a", Expires: now}
	tests := []struct {
		name        string
		cur         *Record
		head        string
		deploy      string
		holderEnded bool
		want        action
	}{
		{"free, no queue", nil, "", "b", false, actTake},
		{"free, caller heads the queue", nil, "b", "b", false, actTake},
		{"free, others queued first", nil, "c", "b", false, actBusy},
		{"held by the caller", live, "", "a", false, actRenew},
		{"held by the caller, expired", expired, "c", "a", false, actRenew},
		{"held by another", live, "", "b", false, actBusy},
		{"held by another that ended", live, "", "b", true, actTake},
		{"held by another that ended, queue first", live, "c", "b", true, actBusy},
		{"expired", expired, "", "b", false, actTake},
		{"expires exactly now", atExpiry, "", "b", false, actTake},
		{"expired, others queued first", expired, "c", "b", false, actBusy},
		{"expired, caller heads the queue", expired, "b", "b", false, actTake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.cur, tt.head, tt.deploy, now, tt.holderEnded); got != tt.want {
				t.Errorf("decide = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFree(t *testing.T) {
	now := time.Now()
	live := &Record{DeployID: "a", Expires: now.Add(time.Second)}
	if free(live, now, false) {
		t.Error("a live lease is free")
	}
	if !free(live, now, true) || !free(nil, now, false) || !free(live, now.Add(time.Second), false) {
		t.Error("an ended, missing or expired lease is not free")
	}
}

func TestTokenAt(t *testing.T) {
	if got := (Record{}).TokenAt(7); got != 7 {
		t.Errorf("acquiring write: token = %d, want its revision 7", got)
	}
	if got := (Record{Token: 7}).TokenAt(9); got != 7 {
		t.Errorf("renewed: token = %d, want 7", got)
	}
}

func ids(q Queue) []string {
	var out []string
	for _, r := range q.Items {
		out = append(out, r.DeployID)
	}
	return out
}

func TestQueueEnqueue(t *testing.T) {
	var q Queue
	q, pos, dropped := q.enqueue(Request{DeployID: "a"}, false, nil)
	if pos != 1 || dropped != nil {
		t.Fatalf("first: pos %d dropped %v", pos, dropped)
	}
	q, pos, _ = q.enqueue(Request{DeployID: "b"}, false, nil)
	q2, pos2, _ := q.enqueue(Request{DeployID: "a"}, false, nil) // a retried handler
	if pos != 2 || pos2 != 1 || len(q2.Items) != 2 {
		t.Fatalf("positions %d, %d; queue %v", pos, pos2, ids(q2))
	}
	q, pos, dropped = q.enqueue(Request{DeployID: "c", Supersede: true}, false, nil)
	if diff := cmp.Diff([]string{"c"}, ids(q)); diff != "" || pos != 1 {
		t.Errorf("supersede: queue (-want +got):\n%s pos %d", diff, pos)
	}
	if diff := cmp.Diff([]string{"a", "b"}, dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	// A retry of the superseding request reports the same drops.
	if _, _, again := q.enqueue(Request{DeployID: "c", Supersede: true}, false, nil); !cmp.Equal(again, dropped) {
		t.Errorf("retry dropped %v, want %v", again, dropped)
	}
	q, _, _ = q.enqueue(Request{DeployID: "d"}, false, nil)
	if diff := cmp.Diff([]string{"d"}, ids(q.without("c"))); diff != "" || q.head() != "c" {
		t.Errorf("without/head (-want +got):\n%s head %q", diff, q.head())
	}
}

func TestQueueEnqueueKeepsTheHandOver(t *testing.T) {
	q := Queue{Items: []Request{{DeployID: "a"}, {DeployID: "b"}, {DeployID: "c"}}}
	holderB := func(id string) bool { return id == "b" }
	got, pos, dropped := q.marked("a").enqueue(Request{DeployID: "d", Supersede: true}, false, holderB)
	if diff := cmp.Diff([]string{"a", "b", "d"}, ids(got)); diff != "" || pos != 3 || got.Handing != "a" {
		t.Errorf("supersede: queue (-want +got):\n%s pos %d handing %q", diff, pos, got.Handing)
	}
	if diff := cmp.Diff([]string{"c"}, dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
	// A request whose hand-over expired goes first, after the one being handed over; it drops
	// nothing even when it superseded once.
	got, pos, dropped = q.marked("a").enqueue(Request{DeployID: "x", Supersede: true}, true, nil)
	if diff := cmp.Diff([]string{"a", "x", "b", "c"}, ids(got)); diff != "" || pos != 2 || dropped != nil {
		t.Errorf("front: queue (-want +got):\n%s pos %d dropped %v", diff, pos, dropped)
	}
	got, pos, _ = q.enqueue(Request{DeployID: "x"}, true, nil)
	if diff := cmp.Diff([]string{"x", "a", "b", "c"}, ids(got)); diff != "" || pos != 1 {
		t.Errorf("front, nothing handed over: queue (-want +got):\n%s pos %d", diff, pos)
	}
	// The mark goes with its request.
	if got := q.marked("a").without("a"); got.Handing != "" || got.head() != "b" {
		t.Errorf("without the marked request: %+v", got)
	}
	if got := q.marked("a").without("b"); got.Handing != "a" {
		t.Errorf("without another request: handing %q, want a", got.Handing)
	}
	if r, ok := q.marked("b").handing(); !ok || r.DeployID != "b" {
		t.Errorf("handing() = %v, %v; want the marked b", r.DeployID, ok)
	}
	if r, ok := q.handing(); !ok || r.DeployID != "a" {
		t.Errorf("handing() = %v, %v; want the head a", r.DeployID, ok)
	}
	if _, ok := (Queue{}).handing(); ok {
		t.Error("handing() of an empty queue")
	}
}

func TestHandedOver(t *testing.T) {
	for id, want := range map[string]string{
		"d1.requested":                         "",
		"d1.requested.dequeued.17":             "d1.requested",
		"d1.requested.dequeued.17.dequeued.23": "d1.requested",
	} {
		base, ok := handedOver(id)
		if ok != (want != "") || (ok && base != want) || (!ok && base != id) {
			t.Errorf("handedOver(%q) = %q, %v", id, base, ok)
		}
	}
}

func TestKeys(t *testing.T) {
	a := events.Target{Cluster: "kind/prod", Namespace: "shop", Release: "api"}
	b := events.Target{Cluster: "kind_prod", Namespace: "shop", Release: "api"}
	c := events.Target{Cluster: "kind", Namespace: "prod.shop", Release: "api"}
	seen := map[string]events.Target{}
	for _, tg := range []events.Target{a, b, c, {Cluster: "k", Namespace: "n", Release: "r"}} {
		k := LeaseKey(tg)
		if other, dup := seen[k]; dup {
			t.Errorf("%v and %v share key %s", tg, other, k)
		}
		seen[k] = tg
		back, err := targetOfQueueKey(QueueKey(tg))
		if err != nil || back != tg {
			t.Errorf("targetOfQueueKey(QueueKey(%v)) = %v, %v", tg, back, err)
		}
	}
	if _, err := targetOfQueueKey("lease.a.b.c"); err == nil {
		t.Error("a lease key parsed as a queue key")
	}
}
