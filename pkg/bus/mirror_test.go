package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The mirror readers follow keeps the deploy stream's sequences and times, also when it is
// created beside a deploy stream that already dropped its first events (an upgrade): "only
// new" pins and `sealane events` stops on deploy stream sequences.
func TestMirrorKeepsSequencesAndTimes(t *testing.T) {
	checkLeaks(t)
	e := newServerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := jsOf(t, e)
	// A deploy stream from before the mirror existed, its first five events gone.
	origin, err := js.CreateStream(ctx, (&Bus{opts: DefaultOptions()}).streamConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if _, err := js.Publish(ctx, fmt.Sprintf("sealane.deploy.requested.c.ns.r%d", i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if i == 4 {
			if err := origin.Purge(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := New(ctx, e.nc, Options{Topology: TopologyProvision}, e.log); err != nil {
		t.Fatal(err)
	}
	mirror, err := js.Stream(ctx, DefaultMirrorStream)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the mirror to copy the deploy stream", func() bool {
		info, err := mirror.Info(ctx)
		return err == nil && info.State.LastSeq == 8
	})
	for seq := uint64(6); seq <= 8; seq++ {
		want, err := origin.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		got, err := mirror.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("mirror seq %d: %v", seq, err)
		}
		if got.Subject != want.Subject || !got.Time.Equal(want.Time) {
			t.Errorf("mirror seq %d = %s at %s, deploy stream %s at %s", seq, got.Subject, got.Time, want.Subject, want.Time)
		}
	}
	if _, err := mirror.GetMsg(ctx, 5); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("mirror seq 5 (purged before the mirror): %v, want not found", err)
	}
}

// A stream squatting the mirror's name that mirrors nothing is refused by name, not read as
// the deploy events.
func TestMirrorNameTakenByAnotherStream(t *testing.T) {
	e := newServerEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := jsOf(t, e).CreateStream(ctx, jetstream.StreamConfig{Name: DefaultMirrorStream, Subjects: []string{"other.>"}, MaxAge: DefaultMaxAge}); err != nil {
		t.Fatal(err)
	}
	_, err := New(ctx, e.nc, Options{Topology: TopologyProvision}, e.log)
	if !errors.Is(err, ErrTopologyMismatch) || !strings.Contains(err.Error(), DefaultMirrorStream) || !strings.Contains(err.Error(), "not a mirror of "+DefaultStream) {
		t.Fatalf("provision beside a squatting stream: %v, want a mismatch naming it", err)
	}
}

// A message the mirror copied after a StartTime follower started, but stored before
// StartTime, is not delivered.
func TestFollowerDropsEarlierThanStart(t *testing.T) {
	start := time.Now()
	for _, tc := range []struct {
		opts   FollowOptions
		stored time.Time
		early  bool
	}{
		{FollowOptions{StartTime: start}, start.Add(-time.Millisecond), true},
		{FollowOptions{StartTime: start}, start, false},
		{FollowOptions{StartTime: start, DeliverAll: true}, start.Add(-time.Hour), false},
		{FollowOptions{}, start.Add(-time.Hour), false},
	} {
		if got := (&follower{opts: tc.opts}).early(tc.stored); got != tc.early {
			t.Errorf("%+v, stored %s: early %v, want %v", tc.opts, tc.stored.Sub(start), got, tc.early)
		}
	}
}
