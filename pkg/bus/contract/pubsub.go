package contract

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Publisher stores messages in the deploy stream once per message id: *bus.Bus and
// *bustest.Stream.
type Publisher interface {
	Publish(ctx context.Context, msg *nats.Msg, msgID string) (duplicate bool, err error)
}

// PubSubSubject is a Publisher under test, Subject the prefix of subjects its stream holds
// (each behaviour publishes below it), and Messages, which returns the messages stored on
// subject, oldest first.
type PubSubSubject struct {
	Publisher Publisher
	Subject   string
	Messages  func(t *testing.T, subject string) []*nats.Msg
}

// PubSub runs the publisher's behaviours against s, each on its own subject.
func PubSub(t *testing.T, s PubSubSubject) {
	for _, b := range []struct {
		name string
		run  func(t *testing.T, s PubSubSubject, subject string)
	}{
		{"publish stores the message", pubStore},
		{"a repeated message id is a duplicate", pubDedup},
		{"messages keep their order", pubOrder},
		{"the caller's message is not changed", pubUnchanged},
		{"bad messages are refused", pubRefused},
	} {
		t.Run(b.name, func(t *testing.T) { b.run(t, s, fmt.Sprintf("%s.c%d", s.Subject, time.Now().UnixNano())) })
	}
}

func pubStore(t *testing.T, s PubSubSubject, subject string) {
	m := &nats.Msg{Subject: subject, Data: []byte("event"), Header: nats.Header{"Ce-Type": []string{"deploy.requested"}}}
	dup, err := s.Publisher.Publish(ctx(t), m, "store-1")
	if err != nil || dup {
		t.Fatalf("publish: duplicate %v, %v", dup, err)
	}
	got := s.Messages(t, subject)
	if len(got) != 1 {
		t.Fatalf("%d messages stored, want 1", len(got))
	}
	if g := got[0]; g.Subject != subject || string(g.Data) != "event" || g.Header.Get("Ce-Type") != "deploy.requested" ||
		g.Header.Get(nats.MsgIdHdr) != "store-1" {
		t.Fatalf("stored %s %q headers %v", g.Subject, g.Data, g.Header)
	}
}

func pubDedup(t *testing.T, s PubSubSubject, subject string) {
	c := ctx(t)
	if dup, err := s.Publisher.Publish(c, &nats.Msg{Subject: subject, Data: []byte("first")}, "dedup-1"); err != nil || dup {
		t.Fatalf("publish: duplicate %v, %v", dup, err)
	}
	dup, err := s.Publisher.Publish(c, &nats.Msg{Subject: subject, Data: []byte("second")}, "dedup-1")
	if err != nil || !dup {
		t.Fatalf("publish again: duplicate %v, %v; want a duplicate", dup, err)
	}
	got := s.Messages(t, subject)
	if len(got) != 1 || string(got[0].Data) != "first" {
		t.Fatalf("stored %d messages (first %q), want only the first", len(got), got[0].Data)
	}
}

func pubOrder(t *testing.T, s PubSubSubject, subject string) {
	c := ctx(t)
	for i := range 5 {
		if _, err := s.Publisher.Publish(c, &nats.Msg{Subject: subject, Data: fmt.Appendf(nil, "%d", i)}, fmt.Sprintf("order-%s-%d", subject, i)); err != nil {
			t.Fatal(err)
		}
	}
	got := s.Messages(t, subject)
	if len(got) != 5 {
		t.Fatalf("%d messages stored, want 5", len(got))
	}
	for i, m := range got {
		if string(m.Data) != fmt.Sprint(i) {
			t.Fatalf("message %d is %q", i, m.Data)
		}
	}
}

func pubUnchanged(t *testing.T, s PubSubSubject, subject string) {
	m := &nats.Msg{Subject: subject, Data: []byte("x"), Header: nats.Header{"Ce-Id": []string{"1"}}}
	if _, err := s.Publisher.Publish(ctx(t), m, "unchanged-"+subject); err != nil {
		t.Fatal(err)
	}
	if len(m.Header) != 1 || m.Header.Get("Ce-Id") != "1" || string(m.Data) != "x" || m.Subject != subject {
		t.Fatalf("message changed: %s %q %v", m.Subject, m.Data, m.Header)
	}
}

func pubRefused(t *testing.T, s PubSubSubject, subject string) {
	c := ctx(t)
	if _, err := s.Publisher.Publish(c, nil, "nil"); err == nil {
		t.Error("nil message: no error")
	}
	if _, err := s.Publisher.Publish(c, &nats.Msg{Subject: subject, Data: []byte("x")}, ""); err == nil {
		t.Error("empty message id: no error")
	}
	for _, subj := range []string{subject + ".*", subject + ".>", subject + "..x", "", "a b"} {
		if _, err := s.Publisher.Publish(c, &nats.Msg{Subject: subj, Data: []byte("x")}, "bad-"+subj); err == nil {
			t.Errorf("subject %q: no error", subj)
		}
	}
	// A subject no stream holds is never stored; the real bus retries until the deadline.
	short, cancel := context.WithTimeout(c, 2*time.Second)
	defer cancel()
	if _, err := s.Publisher.Publish(short, &nats.Msg{Subject: "contract.outside", Data: []byte("x")}, "outside"); err == nil {
		t.Error("subject outside the stream: no error")
	}
	if got := s.Messages(t, subject); len(got) != 0 {
		t.Fatalf("%d messages stored, want none", len(got))
	}
}
