package bus

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/sealane/sealane/events"
)

// Headers added to a dead letter; the original message's headers are kept beside them.
const (
	HeaderDeadReason     = "Sealane-Dead-Reason"
	HeaderDeadConsumer   = "Sealane-Dead-Consumer"
	HeaderDeadDeliveries = "Sealane-Dead-Deliveries"
	HeaderDeadStreamSeq  = "Sealane-Dead-Stream-Seq"
	HeaderDeadSubject    = "Sealane-Dead-Subject"
	// HeaderDeadMsgID keeps the original Nats-Msg-Id, which cannot be stored under its own name.
	HeaderDeadMsgID = "Sealane-Dead-Msg-Id"
)

// Prefixes of DeadLetter.Reason saying why the consumer gave up.
const (
	ReasonPermanent  = "permanent error"
	ReasonMaxDeliver = "max deliveries reached"
)

// maxReasonLen caps the reason sent with TermWithReason and stored in a header.
const maxReasonLen = 1024

// deadLetterListWait bounds the wait for the next dead letter while listing.
const deadLetterListWait = 5 * time.Second

// DeadLetter is a message a consumer gave up on, as recorded in the dead-letter stream.
type DeadLetter struct {
	// Consumer is the durable (stage) that gave up.
	Consumer string
	// Subject is the original subject, where Redrive publishes again.
	Subject string
	// Reason starts with ReasonPermanent or ReasonMaxDeliver, then the handler's error.
	Reason string
	// Deliveries is how many times the message had been delivered.
	Deliveries uint64
	// StreamSeq is the original message's sequence in the deploy stream.
	StreamSeq uint64
	// Seq is this dead letter's sequence in the dead-letter stream.
	Seq uint64
	// MsgID is the original Nats-Msg-Id, if it had one.
	MsgID string
	// Time is when the dead letter was recorded.
	Time time.Time
	// Header holds the original headers, without server-interpreted Nats-* ones.
	Header nats.Header
	// Data is the original payload.
	Data []byte
}

// deadLetter records msg as a dead letter, calls the hook and terminates the message.
// If recording fails the message is nak'd so a later delivery can try again.
func (c *consumer) deadLetter(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, reason string, log *zap.Logger) {
	reason = oneLine(reason)
	if err := c.b.recordDeadLetter(ctx, c.opts.Durable, msg, md, reason); err != nil {
		// On the last delivery the server will not redeliver; the message stays in the stream.
		log.Error("record dead letter failed; nak'ing message", zap.String("reason", reason), zap.Error(err))
		_ = msg.NakWithDelay(c.opts.Backoff(md.NumDelivered))
		return
	}
	log.Warn("message dead-lettered", zap.String("reason", reason))
	if m := c.b.opts.Metrics; m != nil {
		m.DeadLettered(c.opts.Durable, reason)
	}
	if c.opts.OnDeadLetter != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					log.Error("dead-letter hook panicked", zap.Any("panic", r))
				}
			}()
			c.opts.OnDeadLetter(ctx, msg, reason)
		}()
	}
	if err := msg.TermWithReason(reason); err != nil {
		log.Warn("terminate failed; message may be redelivered", zap.Error(err))
	}
}

// recordDeadLetter publishes msg to the dead-letter stream with Msg-Id "<durable>.<seq>", so
// recording the same delivery twice stores it once.
func (b *Bus) recordDeadLetter(ctx context.Context, durable string, msg jetstream.Msg, md *jetstream.MsgMetadata, reason string) error {
	h := make(nats.Header, len(msg.Headers())+6)
	for k, v := range msg.Headers() {
		if isServerHeader(k) {
			continue
		}
		h[k] = append([]string(nil), v...)
	}
	if id := msg.Headers().Get(jetstream.MsgIDHeader); id != "" {
		h.Set(HeaderDeadMsgID, id)
	}
	h.Set(HeaderDeadReason, reason)
	h.Set(HeaderDeadConsumer, durable)
	h.Set(HeaderDeadDeliveries, strconv.FormatUint(md.NumDelivered, 10))
	h.Set(HeaderDeadStreamSeq, strconv.FormatUint(md.Sequence.Stream, 10))
	h.Set(HeaderDeadSubject, msg.Subject())
	dl := &nats.Msg{Subject: DeadLetterSubjectPrefix + "." + durable, Header: h, Data: msg.Data()}
	_, err := b.publish(ctx, b.opts.DeadLetterStream, dl, fmt.Sprintf("%s.%d", durable, md.Sequence.Stream))
	return err
}

// DeadLetters lists every recorded dead letter, oldest first. The listing is one call under
// the call rule (see Call): a listing cut by a lost connection starts over.
func (b *Bus) DeadLetters(ctx context.Context) ([]DeadLetter, error) {
	name := b.opts.DeadLetterStream
	info, err := b.StreamInfo(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	if info.State.Msgs == 0 {
		return nil, nil
	}
	out, err := callWithin(ctx, b.link, blobCallTimeout, func(ctx context.Context) ([]DeadLetter, error) { return b.listDeadLetters(ctx, name) })
	if err != nil {
		return nil, fmt.Errorf("list dead letters in %s: %w", name, err)
	}
	return out, nil
}

func (b *Bus) listDeadLetters(ctx context.Context, name string) ([]DeadLetter, error) {
	oc, err := b.js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, err
	}
	it, err := oc.Messages()
	if err != nil {
		return nil, err
	}
	defer it.Stop()
	var out []DeadLetter
	for {
		nctx, cancel := context.WithTimeout(ctx, deadLetterListWait)
		msg, err := it.Next(jetstream.NextContext(nctx))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return out, nil // messages were removed while listing
		}
		if err != nil {
			return nil, err
		}
		dl, md, err := parseDeadLetter(msg)
		if err != nil {
			return nil, Permanent(err)
		}
		out = append(out, dl)
		if md.NumPending == 0 {
			return out, nil
		}
	}
}

// parseDeadLetter reads a dead-letter stream message.
func parseDeadLetter(msg jetstream.Msg) (DeadLetter, *jetstream.MsgMetadata, error) {
	md, err := msg.Metadata()
	if err != nil {
		return DeadLetter{}, nil, fmt.Errorf("dead letter on %s: %w", msg.Subject(), err)
	}
	hdr := msg.Headers()
	dl := DeadLetter{
		Consumer: hdr.Get(HeaderDeadConsumer),
		Subject:  hdr.Get(HeaderDeadSubject),
		Reason:   hdr.Get(HeaderDeadReason),
		MsgID:    hdr.Get(HeaderDeadMsgID),
		Seq:      md.Sequence.Stream,
		Time:     md.Timestamp,
		Header:   nats.Header{},
		Data:     msg.Data(),
	}
	if dl.Deliveries, err = strconv.ParseUint(hdr.Get(HeaderDeadDeliveries), 10, 64); err != nil {
		return DeadLetter{}, nil, fmt.Errorf("dead letter %d: %s: %w", dl.Seq, HeaderDeadDeliveries, err)
	}
	if dl.StreamSeq, err = strconv.ParseUint(hdr.Get(HeaderDeadStreamSeq), 10, 64); err != nil {
		return DeadLetter{}, nil, fmt.Errorf("dead letter %d: %s: %w", dl.Seq, HeaderDeadStreamSeq, err)
	}
	for k, v := range hdr {
		if isServerHeader(k) || strings.HasPrefix(k, "Sealane-Dead-") {
			continue
		}
		dl.Header[k] = append([]string(nil), v...)
	}
	return dl, md, nil
}

// Redrive publishes dl's original message again on its original subject, under the Msg-Id
// "<original id>.redrive.<dead-letter seq>": retrying one Redrive is deduplicated, while each
// dead letter can be redriven. The dead letter itself stays recorded.
func (b *Bus) Redrive(ctx context.Context, dl DeadLetter) error {
	if dl.Subject == "" || dl.Seq == 0 {
		return fmt.Errorf("redrive dead letter of %s seq %d: incomplete dead letter (use DeadLetters)", dl.Consumer, dl.StreamSeq)
	}
	id := dl.MsgID
	if id == "" {
		id = fmt.Sprintf("%s.%d", dl.Consumer, dl.StreamSeq)
	}
	id = fmt.Sprintf("%s.redrive.%d", id, dl.Seq)
	msg := &nats.Msg{Subject: dl.Subject, Header: cloneHeader(dl.Header), Data: dl.Data}
	if _, err := b.Publish(ctx, msg, id); err != nil {
		return fmt.Errorf("redrive dead letter %d to %s: %w", dl.Seq, dl.Subject, err)
	}
	return nil
}

// isServerHeader reports whether k is a header the server interprets (Nats-Msg-Id,
// Nats-Expected-*, ...); copying one into another publish would change its meaning.
func isServerHeader(k string) bool {
	return len(k) >= 5 && strings.EqualFold(k[:5], "Nats-")
}

// oneLine makes s safe as a header value and bounded in size.
func oneLine(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if len(s) > maxReasonLen {
		s = strings.ToValidUTF8(s[:maxReasonLen], "")
	}
	return s
}

// DeadLetterView is a dead letter as people see it (`sealane events --dead-letters -o json`,
// the console): the original event's CloudEvents attributes are read from its headers and its
// payload is left out (only its size is given) — events carry no secret by design, but a
// malformed message a stage gave up on could be anything.
type DeadLetterView struct {
	ID         uint64    `json:"id"`
	Time       time.Time `json:"time"`
	Consumer   string    `json:"consumer"`
	Reason     string    `json:"reason"`
	Deliveries uint64    `json:"deliveries"`
	Subject    string    `json:"subject"`
	StreamSeq  uint64    `json:"streamSeq"`
	Type       string    `json:"type,omitempty"`
	EventID    string    `json:"eventId,omitempty"`
	DeployID   string    `json:"deployId,omitempty"`
	Target     string    `json:"target,omitempty"`
	DataBytes  int       `json:"dataBytes"`
}

// View returns what may be shown of dl.
func (dl DeadLetter) View() DeadLetterView {
	ce := func(name string) string {
		for k, vs := range dl.Header {
			if strings.EqualFold(k, "ce-"+name) && len(vs) > 0 {
				if v, err := url.PathUnescape(vs[0]); err == nil {
					return v
				}
				return vs[0]
			}
		}
		return ""
	}
	return DeadLetterView{
		ID: dl.Seq, Time: dl.Time, Consumer: dl.Consumer, Reason: dl.Reason, Deliveries: dl.Deliveries,
		Subject: dl.Subject, StreamSeq: dl.StreamSeq, Type: ce("type"), EventID: ce("id"),
		DeployID: ce(events.ExtCorrelationID), Target: ce("subject"), DataBytes: len(dl.Data),
	}
}
