package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The rule for every call sealane makes to NATS (docs/architecture.md, invariant 8):
//
//   - each attempt has a deadline of its own (CallTimeout; longer for blobs), never only the
//     caller's, which may be a whole deploy's;
//   - an attempt that fails transiently (a timeout, a lost connection, no responders while a
//     server restarts or a stream elects its leader, JetStream 503) is tried again with backoff
//     until the caller's context ends;
//   - a write whose answer was lost is recognised when it is tried again (see KV).
//
// call and do are that rule, and link.attempt ends an attempt as soon as its connection drops;
// KV (the state and lease buckets), the blob methods, Publish, Consume, Follow, StreamInfo,
// LastMsg and DeadLetters use them. Code outside this package reaches NATS only through the
// Bus and KV: TestJetStreamOnlyThroughBus fails on a raw JetStream handle used elsewhere.
//
// Why: a request written to a connection that dies with its server is never answered; nats.go
// waits for the context's deadline (nats.go jetstream.wrapContextWithoutDeadline adds one only
// when the context has none). Before this rule, a lease read issued as NATS restarted waited
// for a deploy's whole 3-minute deadline and failed the deploy although the server had been
// back for minutes (issue 12, TestNATSRestart seed 1795663353368682226).

// CallTimeout bounds one attempt of a JetStream API call (a KV operation, a stream or
// consumer request, a publish acknowledgement). It matches nats.go's own default API timeout.
const CallTimeout = 5 * time.Second

// blobCallTimeout bounds one attempt of an Object Store put or get: a blob is many chunks.
const blobCallTimeout = 30 * time.Second

// callBackoff is the wait between attempts: 100 ms doubling to 2 s, with jitter.
func callBackoff() backoff { return backoff{min: 100 * time.Millisecond, max: 2 * time.Second} }

// call runs f with a deadline of its own (CallTimeout, or less when ctx ends sooner) and runs it
// again with backoff while it fails transiently, until it succeeds, fails for good or ctx
// ends. An attempt also ends when l's connection drops (l may be nil). The error after ctx
// ended wraps ctx's error and names the last attempt's.
func call[T any](ctx context.Context, l *link, f func(ctx context.Context) (T, error)) (T, error) {
	return callWithin(ctx, l, CallTimeout, f)
}

// do is call for a function with no result.
func do(ctx context.Context, l *link, f func(ctx context.Context) error) error {
	_, err := call(ctx, l, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

// callWithin is call with a per-attempt deadline of timeout.
func callWithin[T any](ctx context.Context, l *link, timeout time.Duration, f func(ctx context.Context) (T, error)) (T, error) {
	bo := callBackoff()
	for attempt := 1; ; attempt++ {
		actx, cancel := l.attempt(ctx, timeout)
		v, err := f(actx)
		dropped := lost(actx)
		cancel()
		if err == nil {
			return v, nil
		}
		if ctx.Err() != nil {
			return v, fmt.Errorf("%w (%d attempts; the last: %v)", ctx.Err(), attempt, err)
		}
		if errors.Is(err, nats.ErrConnectionClosed) || (!dropped && !transient(err)) {
			return v, err
		}
		if serr := sleepCtx(ctx, bo.next()); serr != nil {
			return v, fmt.Errorf("%w (%d attempts; the last: %v)", serr, attempt, err)
		}
	}
}

// transient reports whether a call's error may go away on retry: the attempt timed out, the
// connection is reconnecting, or JetStream is briefly unavailable.
func transient(err error) bool {
	if errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrStaleConnection) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 503: JetStream temporarily unavailable (no stream leader yet, no quorum); 408: the
		// server timed the request out.
		return apiErr.Code == 503 || apiErr.Code == 408
	}
	return false
}

// ambiguous reports whether the failed write attempt with context actx may have been applied:
// its request may have reached the server and only the answer was lost. No responders means
// it was not delivered.
func ambiguous(actx context.Context, err error) bool {
	if lost(actx) {
		return true
	}
	return transient(err) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrJetStreamNotEnabled) &&
		!errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount)
}
