package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/pkg/bus"
)

// RetentionEnv is the environment variable with the default Options.Retention, as a Go
// duration ("720h") or a number of days ("30d").
const RetentionEnv = "SEALANE_RETENTION"

// ParseRetention reads a retention: a Go duration ("720h", "90m") or whole days ("30d"). It
// must be positive.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("retention %q: want a duration such as 720h or a number of days such as 30d", s)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("retention %q: want a duration such as 720h or a number of days such as 30d", s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("retention %q: must be positive", s)
	}
	return d, nil
}

// RetentionFromEnv returns $SEALANE_RETENTION parsed, or zero when it is unset.
func RetentionFromEnv() (time.Duration, error) {
	v := os.Getenv(RetentionEnv)
	if v == "" {
		return 0, nil
	}
	d, err := ParseRetention(v)
	if err != nil {
		return 0, fmt.Errorf("$%s: %w", RetentionEnv, err)
	}
	return d, nil
}

// retention is the deploy stream's max age for bus.New: o.Retention, else $SEALANE_RETENTION,
// else the existing stream's (so that a client that was not told a retention — sealane
// events, sealane deploy — never resets what `serve --retention` set), else the default.
// bus.New applies it with CreateOrUpdateStream: existing streams keep their events and only
// their limit changes.
func (o Options) retention(ctx context.Context, nc *nats.Conn, opts bus.Options) (time.Duration, error) {
	if o.Retention < 0 {
		return 0, fmt.Errorf("retention %s: must be positive", o.Retention)
	}
	if o.Retention > 0 {
		return o.Retention, nil
	}
	if d, err := RetentionFromEnv(); err != nil || d > 0 {
		return d, err
	}
	info, err := bus.StreamInfo(ctx, nc, opts.WithDefaults().Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return opts.MaxAge, nil
	case err != nil:
		return 0, fmt.Errorf("read retention: %w", err)
	}
	if age := info.Config.MaxAge; age > 0 {
		return age, nil
	}
	return opts.MaxAge, nil
}
