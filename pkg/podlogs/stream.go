package podlogs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/manifest"
	"github.com/sealane/sealane/pkg/resource"
)

// Batch is a run of shown log lines of one container of one pod, to become an
// events.LogLinesData. Lines carry the container's own timestamps; their Stream is empty
// (unknown): with timestamps the API interleaves stdout and stderr without saying which is which.
type Batch struct {
	// Owner is the tracked resource the pod belongs to, as given to Add.
	Owner     manifest.Ref
	Namespace string
	Pod       string
	Container string
	Lines     []events.LogLine
	// Dropped counts the lines left out since the previous batch of this container because
	// they went over Options.MaxLinesPerSecond.
	Dropped int
}

// Options tune a Streamer; zero fields take the defaults of DefaultOptions.
type Options struct {
	// Since is when tracking started. Pods created before it are read from it on (SinceTime);
	// pods created after it, from their start. Zero: the time New is called.
	Since time.Time
	// FlushInterval and MaxBatchLines: a container's pending lines are delivered every
	// FlushInterval or as soon as there are MaxBatchLines of them.
	FlushInterval time.Duration
	MaxBatchLines int
	// MaxLineBytes cuts longer lines (bytes of UTF-8, ending in "…").
	MaxLineBytes int
	// MaxLinesPerSecond is per container; lines over it are counted in Batch.Dropped.
	MaxLinesPerSecond int
	// MaxContainers bounds the containers streamed at once by one Streamer.
	MaxContainers int
	// RetryMin and RetryMax bound the backoff between attempts to open a log stream and
	// between reads of a pod whose containers have not started.
	RetryMin, RetryMax time.Duration
	// RequestTimeout bounds each request for a pod's status (log streams themselves last until
	// the container stops or the pod is removed).
	RequestTimeout time.Duration
	Logger         *zap.Logger
}

// DefaultOptions returns the defaults of Options.
func DefaultOptions() Options {
	return Options{
		FlushInterval:     500 * time.Millisecond,
		MaxBatchLines:     100,
		MaxLineBytes:      2048,
		MaxLinesPerSecond: 100,
		MaxContainers:     50,
		RetryMin:          500 * time.Millisecond,
		RetryMax:          10 * time.Second,
		RequestTimeout:    10 * time.Second,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Since.IsZero() {
		o.Since = time.Now()
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = d.FlushInterval
	}
	if o.MaxBatchLines <= 0 {
		o.MaxBatchLines = d.MaxBatchLines
	}
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = d.MaxLineBytes
	}
	if o.MaxLinesPerSecond <= 0 {
		o.MaxLinesPerSecond = d.MaxLinesPerSecond
	}
	if o.MaxContainers <= 0 {
		o.MaxContainers = d.MaxContainers
	}
	if o.RetryMin <= 0 {
		o.RetryMin = d.RetryMin
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(d.RetryMax, o.RetryMin)
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = d.RequestTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o
}

// Target is a pod to follow, the resource it belongs to and that resource's log settings.
type Target struct {
	Owner    manifest.Ref
	Pod      *corev1.Pod
	Settings resource.LogSettings
}

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("podlogs: streamer closed")

// ErrTooManyContainers is matched (errors.Is) by Add's error when some containers were not
// streamed because Options.MaxContainers are being streamed already.
var ErrTooManyContainers = errors.New("too many containers streamed at once")

// clockSkew is how much older than Options.Since a pod must be to be read from Since only: a
// pod created a moment before tracking started (creationTimestamp has whole seconds, and the
// clocks of the apiserver and this process differ) is read from its start.
const clockSkew = 2 * time.Second

// Streamer follows the logs of many pods and delivers them in batches. Add pods as they are
// discovered (and again on every change: their status tells when containers start), Remove
// them when their logs are no longer wanted, and Close at the end.
type Streamer struct {
	client  kubernetes.Interface
	deliver func(Batch)
	opts    Options
	log     *zap.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	pods   map[podKey]*podStream
	active int // containers being streamed

	deliverMu sync.Mutex
}

// New returns a Streamer reading logs through client. deliver is called with each batch, one
// call at a time; it must not call the Streamer's methods (Close waits for deliveries to end).
func New(client kubernetes.Interface, deliver func(Batch), opts Options) *Streamer {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Streamer{
		client: client, deliver: deliver, opts: opts, log: opts.Logger,
		ctx: ctx, cancel: cancel, pods: map[podKey]*podStream{},
	}
}

type podKey struct{ namespace, name string }

// podStream is one followed pod.
type podStream struct {
	key      podKey
	uid      types.UID
	owner    manifest.Ref
	settings resource.LogSettings
	since    time.Time // zero: from the containers' start
	ctx      context.Context
	cancel   context.CancelFunc
	started  map[string]bool // containers handled (streaming, finished, or not shown); under Streamer.mu

	mu      sync.Mutex
	pod     *corev1.Pod
	changed chan struct{} // closed and replaced when pod changes
}

func (p *podStream) update(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pod = pod
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *podStream) current() (*corev1.Pod, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pod, p.changed
}

// Add starts following the shown containers of t.Pod, or, for a pod already added, takes its
// new status (a pod of the same name with another UID replaces it). Settings and Owner are
// those of the first Add. Which pods to add is the caller's choice (see SelectPods).
func (s *Streamer) Add(t Target) error {
	if t.Pod == nil {
		return errors.New("podlogs: Add without a pod")
	}
	pod := t.Pod.DeepCopy()
	key := podKey{pod.Namespace, pod.Name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	p := s.pods[key]
	if p != nil && p.uid != pod.UID {
		p.cancel()
		p = nil
	}
	if p == nil {
		ctx, cancel := context.WithCancel(s.ctx)
		p = &podStream{key: key, uid: pod.UID, owner: t.Owner, settings: t.Settings, ctx: ctx, cancel: cancel,
			started: map[string]bool{}, pod: pod, changed: make(chan struct{})}
		if pod.CreationTimestamp.Add(clockSkew).Before(s.opts.Since) {
			p.since = s.opts.Since
		}
		s.pods[key] = p
	} else {
		p.update(pod)
	}
	var refused []string
	for _, c := range containersOf(pod) {
		if p.started[c.name] {
			continue
		}
		f, shown := NewFilter(p.settings, c.name)
		if !shown {
			p.started[c.name] = true
			continue
		}
		if s.active >= s.opts.MaxContainers {
			refused = append(refused, c.name)
			continue
		}
		p.started[c.name] = true
		s.active++
		s.wg.Add(1)
		go s.follow(p, c, f)
	}
	if len(refused) > 0 {
		s.log.Debug("pod logs: container limit reached", zap.String("namespace", key.namespace), zap.String("pod", key.name),
			zap.Strings("containers", refused), zap.Int("limit", s.opts.MaxContainers))
		return fmt.Errorf("pod %s/%s: logs of containers %s not shown: %w (limit %d)",
			key.namespace, key.name, strings.Join(refused, ", "), ErrTooManyContainers, s.opts.MaxContainers)
	}
	return nil
}

// Remove stops following the pod; its pending lines are delivered. It does not wait.
func (s *Streamer) Remove(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := podKey{namespace, name}
	if p := s.pods[key]; p != nil {
		p.cancel()
		delete(s.pods, key)
	}
}

// Close stops following every pod and waits until all streams have ended and their pending
// lines are delivered. It may be called more than once.
func (s *Streamer) Close() {
	s.mu.Lock()
	s.closed = true
	s.pods = map[podKey]*podStream{}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// Streaming returns how many containers are followed now (streaming, or waiting to start).
func (s *Streamer) Streaming() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}
