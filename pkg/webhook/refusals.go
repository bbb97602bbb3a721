package webhook

import (
	"context"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sealane/sealane/events"
)

// maxField bounds every text an audit event or log line quotes from a request.
const maxField = 256

// bounded is s cut to maxField bytes at a rune boundary, "…" marking the cut.
func bounded(s string) string {
	if len(s) <= maxField {
		return s
	}
	cut := maxField - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Bounds of one refusal summary.
const (
	maxRefusalCounts = 64  // receiver and reason pairs
	maxRefusalAddrs  = 512 // addresses counted
	topRefusalAddrs  = 5   // addresses named
)

// unknownReceiver and otherReceiver stand for receiver ids in a refusal summary: one no
// receiver has, and the rest past maxRefusalCounts.
const (
	unknownReceiver = "(unknown)"
	otherReceiver   = "(other)"
	// connectionsReceiver counts connections closed unread, over the connection limits.
	connectionsReceiver = "(connection)"
)

// refusalKey is one line of a refusal summary.
type refusalKey struct {
	receiver, reason string
	status           int
}

// refusals counts refused requests and publishes them as one webhook_rejected event per
// interval (the first refusal starts the interval), whatever their number.
type refusals struct {
	interval time.Duration
	now      func() time.Time
	publish  func(context.Context, Audit)

	mu     sync.Mutex
	since  time.Time
	total  int
	counts map[refusalKey]int
	addrs  map[string]int
	timer  *time.Timer
	// flushing counts summaries being published (Flush waits for them).
	flushing sync.WaitGroup
}

func newRefusals(interval time.Duration, now func() time.Time, publish func(context.Context, Audit)) *refusals {
	return &refusals{interval: interval, now: now, publish: publish}
}

// add counts one refused request to receiver (an id the configuration has, or
// unknownReceiver) for reason (a short word) from addr.
func (f *refusals) add(receiver, reason string, status int, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts, f.addrs, f.since = map[refusalKey]int{}, map[string]int{}, f.now()
		f.flushing.Add(1)
		f.timer = time.AfterFunc(f.interval, func() { defer f.flushing.Done(); f.flush() })
	}
	f.total++
	k := refusalKey{receiver: receiver, reason: reason, status: status}
	if _, ok := f.counts[k]; !ok && len(f.counts) >= maxRefusalCounts-1 {
		k = refusalKey{receiver: otherReceiver, reason: otherReceiver}
	}
	f.counts[k]++
	addr = bounded(addr)
	if _, ok := f.addrs[addr]; ok || len(f.addrs) < maxRefusalAddrs {
		f.addrs[addr]++
	}
}

// flush publishes the interval's summary, if any.
func (f *refusals) flush() {
	f.mu.Lock()
	if f.counts == nil {
		f.mu.Unlock()
		return
	}
	sum := &events.WebhookRefused{Since: f.since.UTC(), Until: f.now().UTC(), Total: f.total}
	for k, n := range f.counts {
		sum.Counts = append(sum.Counts, events.WebhookRefusedCount{Receiver: k.receiver, Reason: k.reason, Status: k.status, Count: n})
	}
	for a, n := range f.addrs {
		sum.Sources = append(sum.Sources, events.WebhookSourceCount{Addr: a, Count: n})
	}
	f.counts, f.addrs, f.total, f.timer = nil, nil, 0, nil
	f.mu.Unlock()
	sort.Slice(sum.Counts, func(i, j int) bool {
		a, b := sum.Counts[i], sum.Counts[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Receiver+a.Reason < b.Receiver+b.Reason
	})
	sort.Slice(sum.Sources, func(i, j int) bool {
		if sum.Sources[i].Count != sum.Sources[j].Count {
			return sum.Sources[i].Count > sum.Sources[j].Count
		}
		return sum.Sources[i].Addr < sum.Sources[j].Addr
	})
	if len(sum.Sources) > topRefusalAddrs {
		sum.Sources = sum.Sources[:topRefusalAddrs]
	}
	f.publish(context.Background(), Audit{Type: events.WebhookRejected, Target: events.NoTarget,
		Data: events.WebhookData{Refused: sum}})
}

// Flush publishes the summary of the interval under way now, and waits for any being
// published (the intake stopping).
func (f *refusals) Flush() {
	f.mu.Lock()
	if f.timer != nil && f.timer.Stop() {
		f.flushing.Done() // its function will not run
	}
	f.mu.Unlock()
	f.flush()
	f.flushing.Wait()
}
