package serve

import (
	"context"
	"testing"
	"time"

	"github.com/sealane/sealane/pkg/bus"
)

func TestParseRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{"720h": 720 * time.Hour, "30d": 30 * 24 * time.Hour, " 90m ": 90 * time.Minute} {
		if got, err := ParseRetention(in); err != nil || got != want {
			t.Errorf("ParseRetention(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1h", "0", "1.5d", "0d"} {
		if _, err := ParseRetention(in); err == nil {
			t.Errorf("ParseRetention(%q): no error", in)
		}
	}
}

// The retention set by one client stays when another client opens the pipeline without one,
// and a new retention updates the existing stream in place (events kept).
func TestRetentionKeptAndUpdated(t *testing.T) {
	t.Setenv(RetentionEnv, "")
	ctx := context.Background()
	dir := t.TempDir()
	maxAge := func(n *Node, stream string) time.Duration {
		t.Helper()
		s, err := n.Bus.JetStream().Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.MaxAge
	}
	open := func(o Options) *Node {
		t.Helper()
		o.DataDir = dir
		n, err := Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	n := open(Options{})
	if got := maxAge(n, bus.DefaultStream); got != bus.DefaultMaxAge {
		t.Fatalf("default retention %s, want %s", got, bus.DefaultMaxAge)
	}
	if _, err := n.Bus.JetStream().Publish(ctx, "sealane.deploy.requested.c.ns.r", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	n.Close()

	n = open(Options{Retention: 72 * time.Hour})
	if got := maxAge(n, bus.DefaultStream); got != 72*time.Hour {
		t.Fatalf("after --retention 72h: %s", got)
	}
	if got := maxAge(n, bus.DefaultDeadLetterStream); got != 72*time.Hour {
		t.Fatalf("dead letters after --retention 72h: %s", got)
	}
	n.Close()

	n = open(Options{}) // a client told nothing keeps the stream's retention
	if got := maxAge(n, bus.DefaultStream); got != 72*time.Hour {
		t.Fatalf("a client without retention reset it to %s", got)
	}
	s, _ := n.Bus.JetStream().Stream(ctx, bus.DefaultStream)
	if msgs := s.CachedInfo().State.Msgs; msgs != 1 {
		t.Fatalf("stream has %d messages after the updates, want 1", msgs)
	}
	n.Close()

	t.Setenv(RetentionEnv, "10d")
	n = open(Options{})
	if got := maxAge(n, bus.DefaultStream); got != 240*time.Hour {
		t.Fatalf("$%s=10d: %s", RetentionEnv, got)
	}
	n.Close()

	t.Setenv(RetentionEnv, "soon")
	if _, err := Open(ctx, Options{DataDir: dir}); err == nil {
		t.Fatal("bad $SEALANE_RETENTION accepted")
	}
}
