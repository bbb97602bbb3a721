package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://alice:s3cret@nats:4222", "nats://alice:***@nats:4222"},
		{"tls://tok3n@nats:4222", "tls://***@nats:4222"},
		{"nats://a:p@n1:4222,nats://b:q@n2:4222", "nats://a:***@n1:4222,nats://b:***@n2:4222"},
		{"connect nats://a:p%40ss@n1: refused", "connect nats://a:***@n1: refused"},
		{"nats://:onlypass@h", "nats://***@h"},
		{"no url here", "no url here"},
		{"", ""},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Connect's errors never carry the URL's credentials.
func TestConnectErrorRedactsURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := Connect(ctx, "nats://alice:hunter2@127.0.0.1:1", "test")
	if err == nil {
		t.Fatal("connected to port 1")
	}
	if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "alice:***@") {
		t.Fatalf("error %q leaks the password or lacks the redacted URL", err)
	}
	wrapped := fmt.Errorf("outer: %w", err)
	if !errors.Is(wrapped, err) {
		t.Fatal("unwrap")
	}
}
