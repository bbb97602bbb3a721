// Command webhookhold measures the webhook intake's memory under held connections: it starts
// the intake (with an in-process NATS) as a child process with the default limits, opens many
// connections from many loopback addresses that each send a request's headers and the start of
// a body just under 64 KiB and then stall, and prints the child's RSS before, while the
// connections are held and after, and whether a signed push from another address is accepted
// meanwhile and afterwards.
//
//	go run ./hack/webhookhold -conns 4000
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/githook"
	"github.com/sealane/sealane/pkg/webhook"
)

const secret = "hold-secret"

const receivers = `receivers:
  - id: gh
    type: github
    secrets: [{file: %s}]
    routes:
      - repository: acme/shop
        branches: [main]
        deploy: {cluster: c1, namespace: shop, release: shop}
`

func main() {
	intake := flag.Bool("intake", false, "run the intake (the child process)")
	conns := flag.Int("conns", 4000, "connections to open and hold")
	sources := flag.Int("sources", 100, "loopback addresses they come from (127.0.1.1...)")
	hold := flag.Duration("hold", 4*time.Second, "how long to hold them")
	flag.Parse()
	if *intake {
		if err := runIntake(); err != nil {
			fmt.Fprintln(os.Stderr, "intake:", err)
			os.Exit(1)
		}
		return
	}
	if err := drive(*conns, *sources, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "webhookhold:", err)
		os.Exit(1)
	}
}

// runIntake serves the intake with the default limits until stdin closes, printing its address.
func runIntake() error {
	dir, err := os.MkdirTemp("", "webhookhold")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	secretFile := filepath.Join(dir, "secret")
	cfgFile := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(secretFile, []byte(secret), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(cfgFile, fmt.Appendf(nil, receivers, secretFile), 0o600); err != nil {
		return err
	}
	cfg, err := webhook.LoadConfig(cfgFile, nil)
	if err != nil {
		return err
	}
	srv, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(dir, "js"), Port: -1})
	if err != nil {
		return err
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, err := bus.ConnectInProcess(ctx, srv, "webhookhold")
	if err != nil {
		return err
	}
	log := zap.NewNop()
	b, err := bus.New(ctx, nc, bus.DefaultOptions(), log)
	if err != nil {
		return err
	}
	deliveries, err := webhook.OpenDeliveries(ctx, b, 0)
	if err != nil {
		return err
	}
	if err := b.WebhookAudit(ctx); err != nil {
		return err
	}
	h, err := webhook.NewHandler(cfg, &webhook.NATSSink{Bus: b, Deliveries: deliveries, Log: log}, log, webhook.HandlerOptions{})
	if err != nil {
		return err
	}
	s, err := webhook.Listen(h, webhook.ServerOptions{Addr: "127.0.0.1:0"}, log)
	if err != nil {
		return err
	}
	go func() { _, _ = bufio.NewReader(os.Stdin).ReadString('\n'); cancel() }()
	fmt.Println(s.Addr().String())
	return s.Serve(ctx)
}

// drive starts the intake, holds the connections and reports.
func drive(n, sources int, hold time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-intake")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("intake address: %w", err)
	}
	addr = strings.TrimSpace(addr)
	pid := cmd.Process.Pid
	fmt.Printf("push before:  %s\n", push(addr, "before"))
	fmt.Printf("RSS at rest:  %s\n", rss(pid))
	held := []byte("POST /hooks/gh HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 65000\r\n\r\n{\"ref\":\"")
	var open []net.Conn
	start := time.Now()
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i%sources))}, Timeout: 2 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			continue
		}
		_, _ = c.Write(held)
		open = append(open, c)
	}
	fmt.Printf("opened %d connections from %d addresses in %s\n", len(open), sources, time.Since(start).Round(time.Millisecond))
	peak := 0
	for deadline := time.Now().Add(hold); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if kb := rssKB(pid, "VmRSS"); kb > peak {
			peak = kb
		}
	}
	alive := 0
	for _, c := range open {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && isTimeout(err) {
			alive++ // still held by the intake
		}
	}
	fmt.Printf("held:         RSS peak %.1f MiB (VmHWM %s), %d of %d connections still open\n", float64(peak)/1024, rss(pid), alive, len(open))
	fmt.Printf("push during:  %s\n", push(addr, "during"))
	for _, c := range open {
		c.Close()
	}
	time.Sleep(2 * time.Second)
	fmt.Printf("after close:  RSS %s\n", rss(pid))
	fmt.Printf("push after:   %s\n", push(addr, "after"))
	return nil
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// push sends a signed push from 127.0.0.2 and returns its status.
func push(addr, delivery string) string {
	body := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%040d","repository":{"full_name":"acme/shop","clone_url":"https://git.example.com/acme/shop.git"}}`, time.Now().UnixNano())
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/gh", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", githook.SignGitHub([]byte(secret), body))
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	resp, err := c.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	resp.Body.Close()
	return resp.Status
}

// rss is the process's resident and peak resident memory, as /proc says.
func rss(pid int) string {
	return fmt.Sprintf("%.1f MiB (peak %.1f MiB)", float64(rssKB(pid, "VmRSS"))/1024, float64(rssKB(pid, "VmHWM"))/1024)
}

func rssKB(pid int, field string) int {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb
		}
	}
	return 0
}
