package bustest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/sealane/sealane/pkg/bus"
)

// Stream is a deploy stream in memory that Publish stores into as *bus.Bus.Publish stores into
// JetStream: in order, once per message id (a repeated id is a duplicate, not stored again),
// with a copy of the message. It is safe for concurrent use.
type Stream struct {
	subjects []string

	mu   sync.Mutex
	msgs []*nats.Msg
	ids  map[string]bool
}

// NewStream returns an empty stream bound to subjects (NATS wildcards allowed); none binds it
// to bus.DefaultSubject, the deploy stream's.
func NewStream(subjects ...string) *Stream {
	if len(subjects) == 0 {
		subjects = []string{bus.DefaultSubject}
	}
	return &Stream{subjects: subjects, ids: map[string]bool{}}
}

// Publish stores a copy of msg with message id msgID unless msgID was stored already
// (duplicate). A nil message, an empty id or a malformed subject is an error.
func (s *Stream) Publish(_ context.Context, msg *nats.Msg, msgID string) (duplicate bool, err error) {
	if msg == nil {
		return false, errors.New("publish: nil message")
	}
	if msgID == "" {
		return false, fmt.Errorf("publish %s: empty message id", msg.Subject)
	}
	if !plainSubject(msg.Subject) {
		return false, fmt.Errorf("publish %q: invalid subject", msg.Subject)
	}
	if !s.binds(msg.Subject) {
		return false, fmt.Errorf("publish %s (msg id %s): %w: no stream is bound to the subject", msg.Subject, msgID, nats.ErrNoResponders)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[msgID] {
		return true, nil
	}
	s.ids[msgID] = true
	m := &nats.Msg{Subject: msg.Subject, Data: append([]byte(nil), msg.Data...), Header: nats.Header{}}
	for k, v := range msg.Header {
		m.Header[k] = append([]string(nil), v...)
	}
	m.Header.Set(nats.MsgIdHdr, msgID)
	s.msgs = append(s.msgs, m)
	return false, nil
}

// Messages returns copies of the stored messages, oldest first; each carries its message id
// in the Nats-Msg-Id header, as JetStream stores it.
func (s *Stream) Messages() []*nats.Msg {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*nats.Msg, len(s.msgs))
	for i, m := range s.msgs {
		c := &nats.Msg{Subject: m.Subject, Data: append([]byte(nil), m.Data...), Header: nats.Header{}}
		for k, v := range m.Header {
			c.Header[k] = append([]string(nil), v...)
		}
		out[i] = c
	}
	return out
}

// binds reports whether subject is one of the stream's.
func (s *Stream) binds(subject string) bool {
	for _, f := range s.subjects {
		if matches(f, subject) {
			return true
		}
	}
	return false
}

// plainSubject reports whether s is a NATS subject without wildcards.
func plainSubject(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	for _, t := range strings.Split(s, ".") {
		if t == "" || strings.ContainsAny(t, "*>") {
			return false
		}
	}
	return true
}
