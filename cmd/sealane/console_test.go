package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestConsoleRefusesOpenBind: `sealane console` and `sealane serve console` on a non-loopback
// address without a token or auth-proxy header stop before anything starts, naming the fix.
func TestConsoleRefusesOpenBind(t *testing.T) {
	t.Setenv("SEALANE_CONSOLE_TOKEN", "")
	for _, args := range [][]string{
		{"console", "--addr", "0.0.0.0:18099", "--data-dir", t.TempDir()},
		{"serve", "console", "--console-addr", "0.0.0.0:18099", "--nats", "nats://127.0.0.1:1"},
		{"serve", "all", "--console-addr", ":18099", "--nats", "nats://127.0.0.1:1"},
	} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs(args)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := root.ExecuteContext(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "--token-file") || !strings.Contains(err.Error(), "--auth-proxy-header") {
			t.Errorf("sealane %s: %v, want a refusal naming --token-file and --auth-proxy-header", strings.Join(args, " "), err)
		}
	}
}
