package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/bus"
)

// A NATS URL with credentials shows neither in --help (from $SEALANE_NATS_URL) nor in an
// error; a client against a NATS that serve never provisioned says to run serve first.
func TestNATSURLRedactedAndClientNeedsServe(t *testing.T) {
	s, err := bus.StartServer(bus.ServerOptions{StoreDir: filepath.Join(t.TempDir(), "js"), Port: -1, Token: "right"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	secretURL := strings.Replace(s.ClientURL(), "nats://", "nats://alice:hunter2@", 1)

	t.Setenv("SEALANE_NATS_URL", secretURL)
	help, _, err := runCLIAll(t, "events", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help, "hunter2") || !strings.Contains(help, "alice:***@") {
		t.Errorf("--help shows the URL's password or no redacted URL:\n%s", help)
	}
	t.Setenv("SEALANE_NATS_URL", "")

	_, _, err = runCLIAll(t, "events", "--nats", secretURL)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "alice:***@") {
		t.Errorf("error %v: want the redacted URL and no password", err)
	}
	_, _, err = runCLIAll(t, "events", "--nats", s.ClientURL(), "--nats-token", "right")
	if err == nil || !strings.Contains(err.Error(), "run `sealane serve`") {
		t.Errorf("a client before serve: %v, want to be told to run serve", err)
	}
}
