package webhook

import (
	"context"
	"time"
)

// WatchOptions say what Watch reads: the configuration file, how often, and the environment
// its secret variables come from (nil: os.LookupEnv).
type WatchOptions struct {
	Path     string
	Interval time.Duration
	Getenv   func(string) (string, bool)
}

// Watch loads the configuration at path at once and then every interval (0: 2s), and calls
// apply with each new valid configuration, or onError with the problems of an invalid one,
// for the caller to keep the configuration it has. A configuration is new when the content of
// the file, of a secret file or of a secret variable changed: Watch reads contents rather
// than watching inodes, so a Kubernetes ConfigMap or Secret volume's symlink swap is seen
// like any edit, and an unchanged file is not reported twice. The first load is always
// reported (apply or onError), so a caller that loaded the file with LoadConfig loses no
// change made in between. Watch returns when ctx ends; it starts no goroutine, and calls
// apply and onError from its own.
func Watch(ctx context.Context, o WatchOptions, apply func(*Config), onError func(error)) {
	path, interval, getenv := o.Path, o.Interval, o.Getenv
	if interval <= 0 {
		interval = DefaultWatchInterval
	}
	last := ""
	poll := func() {
		cfg, digest, err := load(path, getenv)
		if digest == last {
			return
		}
		last = digest
		if err != nil {
			onError(err)
			return
		}
		apply(cfg)
	}
	poll()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			poll()
		}
	}
}
