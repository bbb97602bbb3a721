package bus

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sealane/sealane/test/harness"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr bool
	}{
		{"defaults", func(*Options) {}, false},
		{"zero value takes defaults", func(o *Options) { *o = Options{} }, false},
		{"bad stream name", func(o *Options) { o.Stream = "a.b" }, true},
		{"same dead-letter stream", func(o *Options) { o.DeadLetterStream = o.Stream }, true},
		{"bad subject", func(o *Options) { o.Subjects = []string{"a.>.b"} }, true},
		{"subject overlaps dead letters", func(o *Options) { o.Subjects = []string{"sealane.>"} }, true},
		{"bad bucket", func(o *Options) { o.BlobBucket = "a/b" }, true},
		{"replicas too high", func(o *Options) { o.Replicas = 7 }, true},
		{"duplicate window below 2m", func(o *Options) { o.Duplicates = time.Minute }, true},
		{"duplicate window above max age", func(o *Options) { o.MaxAge = 3 * time.Minute; o.Duplicates = 5 * time.Minute }, true},
		{"three replicas", func(o *Options) { o.Replicas = 3 }, false},
		{"same webhook stream", func(o *Options) { o.WebhookStream = o.LogStream }, true},
		{"subject overlaps the webhook stream", func(o *Options) { o.Subjects = []string{"sealane.webhook.x"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.mutate(&o)
			if err := o.Validate(); (err != nil) != tt.wantErr {
				t.Errorf("Validate() = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewConcurrentReplicasAreIdempotent(t *testing.T) {
	e := newServerEnv(t) // nothing exists yet: the replicas race to create it
	ctx := harness.Context(t, 30*time.Second)
	const replicas = 6
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			_, errs[i] = New(ctx, e.connect("replica"), DefaultOptions(), e.log)
		})
	}
	wg.Wait()
	e.newBus() // and once more after the fact
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: New: %v", i, err)
		}
	}

	s, err := e.bus.JetStream().Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	got := struct {
		Subjects   []string
		Retention  jetstream.RetentionPolicy
		Storage    jetstream.StorageType
		Duplicates time.Duration
		MaxAge     time.Duration
	}{cfg.Subjects, cfg.Retention, cfg.Storage, cfg.Duplicates, cfg.MaxAge}
	want := got
	want.Subjects, want.Retention, want.Storage = []string{DefaultSubject}, jetstream.LimitsPolicy, jetstream.FileStorage
	want.Duplicates, want.MaxAge = DefaultDuplicates, DefaultMaxAge
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream config (-want +got):\n%s", diff)
	}
	if _, err := e.bus.JetStream().Stream(ctx, DefaultDeadLetterStream); err != nil {
		t.Errorf("dead-letter stream: %v", err)
	}
	if _, err := e.bus.JetStream().ObjectStore(ctx, DefaultBlobBucket); err != nil {
		t.Errorf("blob bucket: %v", err)
	}
	if _, err := e.bus.StreamInfo(ctx, "KV_"+DefaultStateBucket); err != nil || e.bus.State().Bucket() != DefaultStateBucket {
		t.Errorf("state bucket %q: %v", e.bus.State().Bucket(), err)
	}
	if _, err := e.bus.StreamInfo(ctx, "KV_"+DefaultClusterBucket); err != nil || e.bus.Clusters().Bucket() != DefaultClusterBucket {
		t.Errorf("cluster bucket: %v", err)
	}
}
