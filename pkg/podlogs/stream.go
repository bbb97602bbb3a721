package podlogs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// containerSpec is what a stream needs to know of one container of the pod spec.
type containerSpec struct {
	name string
	init bool
	// always: the container restarts whatever its exit code (a sidecar init container).
	always bool
}

func containersOf(pod *corev1.Pod) []containerSpec {
	var out []containerSpec
	for _, c := range pod.Spec.InitContainers {
		out = append(out, containerSpec{name: c.Name, init: true,
			always: c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways})
	}
	for _, c := range pod.Spec.Containers {
		out = append(out, containerSpec{name: c.Name})
	}
	return out
}

func statusOf(pod *corev1.Pod, c containerSpec) *corev1.ContainerStatus {
	list := pod.Status.ContainerStatuses
	if c.init {
		list = pod.Status.InitContainerStatuses
	}
	for i := range list {
		if list[i].Name == c.name {
			return &list[i]
		}
	}
	return nil
}

// hasLogs reports whether the container has run, so that the kubelet can serve its logs.
func hasLogs(st *corev1.ContainerStatus) bool {
	return st != nil && (st.State.Running != nil || st.State.Terminated != nil ||
		st.RestartCount > 0 || st.LastTerminationState.Terminated != nil)
}

// instance names one run of a container.
func instance(st *corev1.ContainerStatus) string {
	if st == nil {
		return ""
	}
	return fmt.Sprintf("%s#%d", st.ContainerID, st.RestartCount)
}

// stoppedForGood reports whether the container will not run again.
func stoppedForGood(pod *corev1.Pod, c containerSpec, st *corev1.ContainerStatus) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	running := st != nil && st.State.Running != nil
	if pod.DeletionTimestamp != nil && !running {
		return true
	}
	if st == nil || st.State.Terminated == nil {
		return false
	}
	exit := st.State.Terminated.ExitCode
	switch {
	case c.always:
		return false
	case c.init && exit == 0:
		return true
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return true
	case corev1.RestartPolicyOnFailure:
		return exit == 0
	}
	return false
}

// follow streams one container until it stops for good, the pod goes away or is removed.
func (s *Streamer) follow(p *podStream, c containerSpec, f Filter) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		s.active--
		s.mu.Unlock()
	}()
	cs := &containerStream{s: s, p: p, c: c, filter: f, rate: rateLimit{max: s.opts.MaxLinesPerSecond},
		log: s.log.With(zap.String("namespace", p.key.namespace), zap.String("pod", p.key.name), zap.String("container", c.name))}
	defer cs.flush()
	cs.run(p.ctx)
}

// containerStream is the state of one followed container.
type containerStream struct {
	s      *Streamer
	p      *podStream
	c      containerSpec
	filter Filter
	log    *zap.Logger

	last        time.Time // time of the newest line read
	resumeAfter time.Time // lines up to it were read by an earlier stream
	lines       []events.LogLine
	dropped     int
	rate        rateLimit
	// delivered says a batch of this container went out: the first one goes out
	// firstFlushDelay after its first line, the others every FlushInterval.
	delivered bool
}

// firstFlushDelay is how long the first lines of a container are collected before they go out:
// a start-up burst in one batch, shown at once (and the end of a phase, which waits for the
// first lines of new pods, is not held up by the flush interval).
const firstFlushDelay = 25 * time.Millisecond

func (cs *containerStream) run(ctx context.Context) {
	backoff := cs.s.opts.RetryMin
	failures := 0
	done := "" // the instance streamed to its end, waiting for the next one
	for {
		pod, ok := cs.wait(ctx, func(pod *corev1.Pod) bool {
			st := statusOf(pod, cs.c)
			return hasLogs(st) && (done == "" || instance(st) != done)
		})
		if !ok {
			return
		}
		opened := instance(statusOf(pod, cs.c))
		err := cs.stream(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			if failures == 5 {
				cs.log.Warn("pod logs: cannot open the log stream, still trying", zap.Error(err))
			} else {
				cs.log.Debug("pod logs: cannot open the log stream", zap.Error(err), zap.Duration("retryIn", backoff))
			}
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, cs.s.opts.RetryMax)
			if _, gone := cs.refresh(ctx); gone { // the pod went away meanwhile
				return
			}
			continue
		}
		failures = 0
		// The stream ended: the container stopped, or the connection was cut.
		pod, gone := cs.refresh(ctx)
		if gone || ctx.Err() != nil {
			return
		}
		if pod == nil { // status unknown: try again later
			pod, _ = cs.p.current()
		}
		st := statusOf(pod, cs.c)
		if stoppedForGood(pod, cs.c, st) {
			return
		}
		if st != nil && st.State.Running != nil && instance(st) == opened {
			// Still running: the stream was cut, or the status lags behind; read on.
			done = ""
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, cs.s.opts.RetryMax)
			continue
		}
		done = instance(st)
		backoff = cs.s.opts.RetryMin
	}
}

// wait returns the pod once cond holds for the latest status known, reading the pod now and
// then when no update comes through Add. ok is false when ctx ends or the pod is gone.
func (cs *containerStream) wait(ctx context.Context, cond func(*corev1.Pod) bool) (pod *corev1.Pod, ok bool) {
	poll := cs.s.opts.RetryMin
	for {
		pod, changed := cs.p.current()
		if cond(pod) {
			return pod, true
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false
		case <-changed:
			t.Stop()
		case <-t.C:
			poll = min(2*poll, cs.s.opts.RetryMax)
			if _, gone := cs.refresh(ctx); gone {
				return nil, false
			}
		}
	}
}

// refresh reads the pod. gone says it was deleted (or replaced by another of the same name);
// pod is nil when it could not be read.
func (cs *containerStream) refresh(ctx context.Context) (pod *corev1.Pod, gone bool) {
	rctx, cancel := context.WithTimeout(ctx, cs.s.opts.RequestTimeout)
	defer cancel()
	pod, err := cs.s.client.CoreV1().Pods(cs.p.key.namespace).Get(rctx, cs.p.key.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, true
	case err != nil:
		if ctx.Err() == nil {
			cs.log.Debug("pod logs: cannot read the pod", zap.Error(err))
		}
		return nil, false
	case cs.p.uid != "" && pod.UID != cs.p.uid:
		return nil, true
	}
	cs.p.update(pod)
	return pod, false
}

// stream reads one log stream of the container to its end (nil), or returns why it could not be
// opened. Lines are delivered as they come.
func (cs *containerStream) stream(ctx context.Context) error {
	opts := &corev1.PodLogOptions{Container: cs.c.name, Follow: true, Timestamps: true}
	from := cs.p.since
	if cs.last.After(from) {
		from = cs.last
	}
	if !from.IsZero() {
		t := metav1.NewTime(from) // whole seconds on the wire: earlier lines are dropped below
		opts.SinceTime = &t
	}
	cs.resumeAfter = cs.last
	rc, err := cs.s.client.CoreV1().Pods(cs.p.key.namespace).GetLogs(cs.p.key.name, opts).Stream(ctx)
	if err != nil {
		return fmt.Errorf("open the logs of %s/%s container %s: %w", cs.p.key.namespace, cs.p.key.name, cs.c.name, err)
	}
	defer rc.Close()

	lines := make(chan string, 64)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		readErr <- readLines(rc, cs.s.opts.MaxLineBytes+64, func(text string, _ bool) bool {
			select {
			case lines <- text:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	ticker := time.NewTicker(cs.s.opts.FlushInterval)
	defer ticker.Stop()
	var first <-chan time.Time // the first batch's flush, once its first line came
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil && ctx.Err() == nil {
					cs.log.Debug("pod logs: log stream broke", zap.Error(err))
				}
				cs.flush() // the container may have stopped: show its last words now
				return nil
			}
			cs.add(l, time.Now())
			if !cs.delivered && first == nil && len(cs.lines) > 0 {
				first = time.After(firstFlushDelay)
			}
		case <-first:
			first = nil
			cs.flush()
		case <-ticker.C:
			cs.flush()
		case <-ctx.Done():
			rc.Close()
			for range lines { // let the reader end
			}
			<-readErr
			return nil
		}
	}
}

// readLines calls emit with each line of r (without the line end), keeping at most maxBytes of
// each: cut says the rest was thrown away. It stops when emit returns false.
func readLines(r io.Reader, maxBytes int, emit func(text string, cut bool) bool) error {
	br := bufio.NewReaderSize(r, 16*1024)
	var buf []byte
	cut := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if room := max(maxBytes-len(buf), 0); len(chunk) > room {
			chunk, cut = chunk[:room], true
		}
		buf = append(buf, chunk...)
		if err != nil {
			if len(buf) > 0 {
				emit(string(buf), cut)
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if !isPrefix {
			if !emit(string(buf), cut) {
				return nil
			}
			buf, cut = buf[:0], false
		}
	}
}

// add takes one line as read from the stream.
func (cs *containerStream) add(raw string, now time.Time) {
	ts, text, ok := splitTimestamp(raw)
	if ok {
		if !cs.p.since.IsZero() && ts.Before(cs.p.since) {
			return // before tracking started (SinceTime has whole seconds)
		}
		if !cs.resumeAfter.IsZero() && !ts.After(cs.resumeAfter) {
			return // read by an earlier stream
		}
		if ts.After(cs.last) {
			cs.last = ts
		}
	} else {
		ts = now
	}
	text = strings.TrimSuffix(text, "\r")
	if !cs.filter.Keep(text) {
		return
	}
	if !cs.rate.allow(now) {
		cs.dropped++
		return
	}
	// A line cut by readLines (MaxLineBytes+64 bytes kept, the time taking at most 36) is
	// longer than MaxLineBytes still, so cut marks it with "…".
	cs.lines = append(cs.lines, events.LogLine{Time: ts, Text: cut(text, cs.s.opts.MaxLineBytes)})
	if len(cs.lines) >= cs.s.opts.MaxBatchLines {
		cs.flush()
	}
}

// flush delivers the pending lines and the count of dropped ones.
func (cs *containerStream) flush() {
	if len(cs.lines) == 0 && cs.dropped == 0 {
		return
	}
	b := Batch{Owner: cs.p.owner, Namespace: cs.p.key.namespace, Pod: cs.p.key.name, Container: cs.c.name,
		Lines: cs.lines, Dropped: cs.dropped}
	cs.lines, cs.dropped, cs.delivered = nil, 0, true
	cs.s.deliverMu.Lock()
	defer cs.s.deliverMu.Unlock()
	cs.s.deliver(b)
}

// sleep waits d or until ctx ends; false means ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
