package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// client is one browser's event stream: messages wait in a buffered channel; a client that
// lets the buffer fill is dropped (gone closes) rather than slowing everyone down.
type client struct {
	ch   chan []byte
	gone chan struct{}
}

// hub holds the connected clients. Its methods are called with the Server's lock held, so a
// client registered together with its snapshot misses nothing and repeats nothing.
type hub struct {
	clients map[*client]struct{}
	buffer  int
	dropped int
}

func newHub(buffer int) *hub { return &hub{clients: map[*client]struct{}{}, buffer: buffer} }

// join registers a client whose first message is first.
func (h *hub) join(first []byte) *client {
	c := &client{ch: make(chan []byte, h.buffer), gone: make(chan struct{})}
	c.ch <- first
	h.clients[c] = struct{}{}
	return c
}

// leave unregisters c (a no-op for a dropped client).
func (h *hub) leave(c *client) { delete(h.clients, c) }

// broadcast queues msg for every client without blocking; a client whose buffer is full is
// dropped.
func (h *hub) broadcast(msg []byte) {
	for c := range h.clients {
		select {
		case c.ch <- msg:
		default:
			delete(h.clients, c)
			close(c.gone)
			h.dropped++
		}
	}
}

// sseMessage formats one server-sent event carrying v as JSON.
func sseMessage(event string, v any) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\ndata: ", event)
	if err := json.NewEncoder(&b).Encode(v); err != nil { // Encode ends the line
		b.WriteString("{}\n")
	}
	b.WriteString("\n")
	return b.Bytes()
}

// stream serves /api/stream: a snapshot (event "hello": the deploys), then every event as it
// is stored ("entry": the entry and its deploy's summary) and rollout changes ("rollout"),
// with keep-alive comments while idle. It returns when the browser goes, the console stops or
// the client is dropped as slow (the browser's EventSource then reconnects).
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	s.mu.Lock()
	c := s.hub.join(sseMessage("hello", hello{Deploys: s.model.list()}))
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.hub.leave(c)
		s.mu.Unlock()
	}()
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return
	}
	fl.Flush()
	tick := time.NewTicker(s.opts.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.gone:
			return
		case msg := <-c.ch:
			if _, err := w.Write(msg); err != nil {
				return
			}
			s.drain(w, c)
			fl.Flush()
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// drain writes what else is queued for c, so a burst goes out in one flush.
func (s *Server) drain(w http.ResponseWriter, c *client) {
	for {
		select {
		case msg := <-c.ch:
			if _, err := w.Write(msg); err != nil {
				return
			}
		default:
			return
		}
	}
}

// hello is the first message of an event stream.
type hello struct {
	Deploys []Deploy `json:"deploys"`
}

// entryMessage is the message of one event.
type entryMessage struct {
	Deploy Deploy `json:"deploy"`
	Entry  Entry  `json:"entry"`
}
