package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
)

// storedBytes is what the in-process NATS server stores for the account: every stream,
// bucket and object store.
func (in *intake) storedBytes(t *testing.T) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := in.bus.JetStream().AccountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.Store
}

// rawRequest writes req on a new connection to the intake and returns the answer's status
// line ("" when the intake closed the connection without one).
func rawRequest(addr string, req []byte) string {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { _, _ = conn.Write(req) }() // the intake may answer before it read it all
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

// TestIntakeFloodAddsLittleToNATS: 10,000 unsigned requests with 60 KB methods from one client
// add less than 1 MB to NATS (the refusals are summed up in one audit event per interval,
// every field bounded), and a signed push still deploys afterwards. Requests with methods of
// 8 KB, which reach the handler, quote none of it.
func TestIntakeFloodAddsLittleToNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 requests")
	}
	in := newIntake(t, func(o *HandlerOptions) { o.Limits.AuditInterval = time.Minute })
	addr := strings.TrimPrefix(in.base, "http://")
	before := in.storedBytes(t)
	method60k := bytes.Repeat([]byte("X"), 60_000)
	huge := append(method60k, " /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"...)
	method8k := bytes.Repeat([]byte("Y"), 8_000)
	long := append(method8k, " /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"...)
	statuses := map[string]int{}
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	const total = 10_000
	for range 16 {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > total {
					return
				}
				req := huge
				if i%10 == 0 {
					req = long // every tenth short enough to reach the handler
				}
				line := rawRequest(addr, req)
				code := "closed"
				if f := strings.Fields(line); len(f) >= 2 {
					code = f[1]
				}
				mu.Lock()
				statuses[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	in.h.refused.Flush()
	time.Sleep(100 * time.Millisecond)
	grown := in.storedBytes(t) - before
	t.Logf("10,000 requests with 60 KB (and 8 KB) methods: answers %v; NATS grew by %d bytes", statuses, grown)
	if grown >= 1<<20 {
		t.Errorf("NATS grew by %d bytes for 10,000 refused requests, want < 1 MB", grown)
	}
	for _, raw := range in.events(t, events.WebhookRejected) {
		if bytes.Contains(raw, []byte("XXXXXXXX")) || bytes.Contains(raw, []byte("YYYYYYYY")) || len(raw) > 8<<10 {
			t.Errorf("refusal summary of %d bytes quotes a method: %.300s", len(raw), raw)
		}
	}
	// The flood is over: a signed push from another address deploys (the flooding address
	// may still be limited).
	body := githubPush("refs/heads/main", shaA, false)
	h := githubHeaders(ghOld, "after-flood", body)
	code, a := sendFrom(t, in.base, "127.0.0.2", "gh", h, body)
	if code != http.StatusAccepted || len(a.DeployIDs) != 1 {
		t.Fatalf("signed push after the flood: %d %+v, want 202", code, a)
	}
	if n := len(in.events(t, events.DeployRequested)); n != 1 {
		t.Errorf("%d deploy requests in the stream after the flood and a push, want 1", n)
	}
}

// sendFrom posts body to receiver id from local address src (another loopback address: another
// client to the intake).
func sendFrom(t *testing.T, base, src, id string, h http.Header, body []byte) (int, answer) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext}}
	defer c.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodPost, base+HookPrefix+id, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a answer
	_ = json.Unmarshal(raw, &a)
	return resp.StatusCode, a
}

// TestIntakeLimitsSourceBeforeReading: a client over its rate is answered 429 at once, its body
// unread (a request whose body never comes is not left to time out), signature or not, while
// another client's push deploys.
func TestIntakeLimitsSourceBeforeReading(t *testing.T) {
	in := newIntake(t, func(o *HandlerOptions) { o.Limits.SourceRate, o.Limits.SourceBurst = 1, 3 })
	addr := strings.TrimPrefix(in.base, "http://")
	stalled := []byte("POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	type result struct {
		line    string
		elapsed time.Duration
	}
	results := make(chan result, 6)
	for range 6 {
		go func() {
			start := time.Now()
			results <- result{rawRequestFrom(addr, "127.0.0.3", stalled), time.Since(start)}
		}()
	}
	quick429 := 0
	for range 6 {
		r := <-results
		if strings.HasPrefix(r.line, "HTTP/1.1 429") && r.elapsed < 500*time.Millisecond {
			quick429++
		}
	}
	if quick429 != 3 {
		t.Fatalf("%d of 6 concurrent stalled requests of a client allowed 3 answered 429 at once, want 3 (before their 700 ms body timeout)", quick429)
	}
	body := githubPush("refs/heads/main", shaA, false)
	if code, a := sendFrom(t, in.base, "127.0.0.4", "gh", githubHeaders(ghOld, "other-client", body), body); code != http.StatusAccepted {
		t.Fatalf("push of another client: %d %+v, want 202", code, a)
	}
	if code, _ := sendFrom(t, in.base, "127.0.0.3", "gh", githubHeaders(ghOld, "limited-client", body), body); code != http.StatusTooManyRequests {
		t.Fatalf("signed push of the limited client: %d, want 429 (the limit comes before the signature)", code)
	}
}

// rawRequestFrom is rawRequest from local address src, with a 3 s deadline.
func rawRequestFrom(addr, src string, req []byte) string {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	_, _ = conn.Write(req)
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line)
}

// TestIntakeBoundsUnauthenticatedBodies: bodies of any size that never finish hold at most
// MaxBodies body slots at once, and one client at most SourceBodies; the others are answered
// 503 (no slot within the body timeout) without a buffer.
func TestIntakeBoundsUnauthenticatedBodies(t *testing.T) {
	in := newIntake(t, func(o *HandlerOptions) {
		o.Limits = Limits{MaxBodies: 8, SourceBodies: 3, SourceRate: 1000, SourceBurst: 1000, AuditInterval: time.Minute}
	})
	addr := strings.TrimPrefix(in.base, "http://")
	// 60,000-byte bodies: small enough to have bypassed the body budget before
	held := []byte("POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{\"ref\":")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 40 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: netip.AddrFrom4([4]byte{127, 0, 1, byte(1 + i%10)}).AsSlice()}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write(held); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	reading := in.h.readingBodies.Load()
	peak := in.h.peakBodies.Load()
	if reading != 8 || peak > 8 {
		t.Errorf("%d bodies being read (peak %d) while 40 clients hold theirs, want 8 (MaxBodies)", reading, peak)
	}
	// 3 per source: 10 sources × 3 > 8, so the global bound is the one reached; one source alone
	// gets 3.
	in.h.peakBodies.Store(0)
	for _, c := range conns {
		c.Close()
	}
	conns = conns[:0]
	time.Sleep(800 * time.Millisecond) // the intake notices the closed connections
	for range 6 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.2.1")}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_, _ = c.Write(held)
	}
	time.Sleep(300 * time.Millisecond)
	if got := in.h.readingBodies.Load(); got != 3 {
		t.Errorf("%d bodies of one client being read, want 3 (SourceBodies)", got)
	}
	statuses := map[string]int{}
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		statuses[strings.Join(strings.Fields(line)[:min(2, len(strings.Fields(line)))], " ")]++
	}
	if statuses["HTTP/1.1 503"] != 3 || statuses["HTTP/1.1 408"] != 3 {
		t.Errorf("answers to one client's 6 stalled bodies: %v, want 3 × 503 (no slot) and 3 × 408 (too slow)", statuses)
	}
}

// TestNonPostAnswersAlike: a method other than POST gets the same answer for a receiver id that
// exists and one that does not, so that ids cannot be enumerated.
func TestNonPostAnswersAlike(t *testing.T) {
	in := newIntake(t)
	answerTo := func(method, id string) string {
		req, err := http.NewRequest(method, in.base+HookPrefix+id, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Allow"), raw)
	}
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodHead} {
		known, unknown := answerTo(m, "gh"), answerTo(m, "no-such-receiver")
		if known != unknown {
			t.Errorf("%s: known receiver answered %q, unknown %q; want the same", m, known, unknown)
		}
	}
}
