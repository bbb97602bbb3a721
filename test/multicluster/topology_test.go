//go:build multicluster

package multicluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/test/harness"
)

// hubConf is the hub's configuration: JetStream in domain "hub" (the deploy stream, the KV
// buckets and the Object Store live here), a monitor port, and a leaf node listener that
// authenticates the regions' leaf nodes with one user of the stages' (default) account.
const hubConf = `server_name: hub
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream { store_dir: %q, domain: hub }
leafnodes {
  listen: 127.0.0.1:%d
  authorization { user: leaf, password: %q }
}
`

// leafConf is a region's leaf node: no JetStream of its own. A leaf connection never carries
// the plain JetStream API ($JS.API.>, $KV.>, $OBJ.>: nats-server denies it both ways unless the
// system account is shared), so the leaf maps its account's JetStream API into the hub's domain
// ($JS.hub.API.>, which the hub maps back): the pools' unchanged JetStream calls, KV and Object
// Store operations reach the hub. Pulls, acks and event publishes cross as they are.
const leafConf = `server_name: leaf-%s
listen: 127.0.0.1:%d
mappings {
  "$JS.API.>": "$JS.hub.API.>"
  "$KV.>": "$JS.hub.API.$KV.>"
  "$OBJ.>": "$JS.hub.API.$OBJ.>"
}
leafnodes {
  reconnect: 1s
  remotes: [ { url: "nats-leaf://leaf:%s@127.0.0.1:%d" } ]
}
`

// topology is a hub nats-server with one leaf-node nats-server per region, on loopback.
type topology struct {
	t            *testing.T
	bin, dir     string
	hubPort, mon int
	leafListen   int
	password     string
	hubURL       string
	mu           sync.Mutex
	leaves       map[string]*leafNode
}

// leafNode is one region's leaf server: its client port stays the same across restarts.
type leafNode struct {
	region string
	port   int
	conf   string
	proc   *process
}

// URL is the leaf's client URL: what the region's pools connect to.
func (l *leafNode) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", l.port) }

// startTopology starts the hub and a leaf node per region and waits until every leaf is
// connected to the hub.
func startTopology(t *testing.T, bin string, regions ...string) *topology {
	t.Helper()
	var pw [12]byte
	_, _ = rand.Read(pw[:])
	tp := &topology{t: t, bin: bin, dir: t.TempDir(), hubPort: harness.FreePort(t), mon: harness.FreePort(t),
		leafListen: harness.FreePort(t), password: hex.EncodeToString(pw[:]), leaves: map[string]*leafNode{}}
	tp.hubURL = fmt.Sprintf("nats://127.0.0.1:%d", tp.hubPort)
	conf := tp.write("hub.conf", fmt.Sprintf(hubConf, tp.hubPort, tp.mon, filepath.Join(tp.dir, "js"), tp.leafListen, tp.password))
	start(t, "nats hub", bin, "-c", conf)
	waitTCP(t, tp.hubPort)
	for _, r := range regions {
		l := &leafNode{region: r, port: harness.FreePort(t)}
		l.conf = tp.write("leaf-"+r+".conf", fmt.Sprintf(leafConf, r, l.port, tp.password, tp.leafListen))
		tp.leaves[r] = l
		tp.startLeaf(l)
	}
	tp.waitLeaves(time.Minute, regions...)
	return tp
}

func (tp *topology) write(name, text string) string {
	path := filepath.Join(tp.dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		tp.t.Fatal(err)
	}
	return path
}

func (tp *topology) startLeaf(l *leafNode) {
	p := start(tp.t, "nats leaf "+l.region, tp.bin, "-c", l.conf)
	tp.mu.Lock()
	l.proc = p
	tp.mu.Unlock()
	waitTCP(tp.t, l.port)
}

// leaf returns region's leaf node.
func (tp *topology) leaf(region string) *leafNode { return tp.leaves[region] }

// kill SIGKILLs region's leaf nats-server process and waits until it is gone.
func (tp *topology) kill(region string) {
	l := tp.leaves[region]
	if err := l.proc.cmd.Process.Kill(); err != nil {
		tp.t.Fatalf("kill leaf %s: %v", region, err)
	}
	<-l.proc.done
}

// restart starts region's leaf again on the same ports and configuration.
func (tp *topology) restart(region string) { tp.startLeaf(tp.leaves[region]) }

// connectedLeaves returns the leaf nodes connected to the hub (its /leafz): region → the
// connection's remote port, which a reconnected leaf changes.
func (tp *topology) connectedLeaves() map[string]int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/leafz", tp.mon), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var lz struct {
		Leafs []struct {
			Name string `json:"name"`
			Port int    `json:"port"`
		} `json:"leafs"`
	}
	if json.NewDecoder(resp.Body).Decode(&lz) != nil {
		return nil
	}
	out := map[string]int{}
	for _, l := range lz.Leafs {
		out[strings.TrimPrefix(l.Name, "leaf-")] = l.Port
	}
	return out
}

// waitLeaves waits until the leaves of regions are connected to the hub.
func (tp *topology) waitLeaves(d time.Duration, regions ...string) {
	tp.t.Helper()
	if !eventually(d, func() bool {
		got := tp.connectedLeaves()
		for _, r := range regions {
			if _, ok := got[r]; !ok {
				return false
			}
		}
		return true
	}) {
		tp.t.Fatalf("leaf nodes connected to the hub: %v, want %v", tp.connectedLeaves(), regions)
	}
}

// waitReconnected waits until region's leaf is connected to the hub on a connection other than
// the one from port (the one before a restart).
func (tp *topology) waitReconnected(d time.Duration, region string, port int) {
	tp.t.Helper()
	if !eventually(d, func() bool {
		p, ok := tp.connectedLeaves()[region]
		return ok && p != port
	}) {
		tp.t.Fatalf("leaf %s never reconnected to the hub: %v (old connection from port %d)", region, tp.connectedLeaves(), port)
	}
}

// seen is one deploy event the hub carried: its subject and when the test saw it.
type seen struct {
	subject string
	at      time.Time
}

// eventTap subscribes on the hub (core NATS, no consumer) to every deploy event subject, so
// the test sees each event as it is published, wherever from.
type eventTap struct {
	mu     sync.Mutex
	all    []seen
	wanted map[string]chan time.Time // subject filter → first match
}

func tapEvents(t *testing.T, url string) *eventTap {
	t.Helper()
	nc, err := bus.Connect(harness.Context(t, 30*time.Second), url, "leaf-test-tap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tap := &eventTap{wanted: map[string]chan time.Time{}}
	if _, err := nc.Subscribe(events.SubjectPrefix+".>", tap.receive); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tap
}

func (tap *eventTap) receive(m *nats.Msg) {
	now := time.Now()
	tap.mu.Lock()
	defer tap.mu.Unlock()
	tap.all = append(tap.all, seen{subject: m.Subject, at: now})
	for filter, ch := range tap.wanted {
		if subjectMatches(filter, m.Subject) {
			select {
			case ch <- now:
			default:
			}
		}
	}
}

// first returns a channel that receives the time of the next event on a subject matching
// filter (NATS wildcards '*' per token).
func (tap *eventTap) first(filter string) <-chan time.Time {
	ch := make(chan time.Time, 1)
	tap.mu.Lock()
	tap.wanted[filter] = ch
	tap.mu.Unlock()
	return ch
}

// after returns the first event seen after t whose subject matches one of filters.
func (tap *eventTap) after(t time.Time, filters ...string) (seen, bool) {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	for _, s := range tap.all {
		if !s.at.After(t) {
			continue
		}
		for _, f := range filters {
			if subjectMatches(f, s.subject) {
				return s, true
			}
		}
	}
	return seen{}, false
}

// subjectMatches matches a subject against a filter with '*' wildcards (no '>').
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	if len(f) != len(s) {
		return false
	}
	for i := range f {
		if f[i] != "*" && f[i] != s[i] {
			return false
		}
	}
	return true
}
