package podlogs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sealane/sealane/events"
)

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
