package progress

import (
	"io"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
)

// DefaultInterval is how often Live prints the progress table, as werf does.
const DefaultInterval = 5 * time.Second

// Live prints a deploy's events as they arrive: the one-line messages of the stage events at
// once, and the log blocks and the progress table every interval and when the deploy moves on.
// Print may be called from any goroutine; Close stops the ticker and prints what is left.
type Live struct {
	mu       sync.Mutex
	w        io.Writer
	board    *Board
	interval time.Duration
	now      func() time.Time
	last     time.Time // when the table was last printed
	closed   bool

	stop chan struct{}
	done chan struct{}
}

// NewLive starts a Live writing to w every interval (DefaultInterval when not positive); color
// turns on ANSI colours in the table. Call Close when the deploy is over.
func NewLive(w io.Writer, interval time.Duration, color bool) *Live {
	return newLive(w, interval, color, time.Now)
}

func newLive(w io.Writer, interval time.Duration, color bool, now func() time.Time) *Live {
	if interval <= 0 {
		interval = DefaultInterval
	}
	l := &Live{w: w, board: NewBoard(color), interval: interval, now: now,
		stop: make(chan struct{}), done: make(chan struct{})}
	l.last = now()
	go l.loop()
	return l
}

func (l *Live) loop() {
	defer close(l.done)
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			// A table printed because the deploy moved on counts as this tick's.
			if now := l.now(); now.Sub(l.last) >= l.interval/2 {
				l.render(now)
			}
			l.mu.Unlock()
		}
	}
}

// render writes what the board has to show; the caller holds mu.
func (l *Live) render(now time.Time) {
	if s := l.board.Render(now); s != "" {
		_, _ = io.WriteString(l.w, s)
	}
	l.last = now
}

// Print takes in one event. A stage event (rendered, phase applied, tracked, failed, recorded...)
// prints its line at once, after the table when resources changed since it was last printed, so
// that the output reads in order: the table shows the state the stage event follows, and for
// PhaseTracked and DeployFailed the failures they report. Resource progress and log lines wait
// for the next table.
func (l *Live) Print(e cloudevents.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch t := events.Type(e.Type()); t {
	case events.ResourceProgressed, events.LogLines:
		l.board.Add(e)
		return
	case events.PhaseTracked, events.DeployFailed:
		l.board.Add(e)
		l.flush()
	default:
		l.flush()
		l.board.Add(e)
	}
	if line := Line(e); line != "" {
		_, _ = io.WriteString(l.w, line+"\n")
	}
}

// flush prints the board when it has something new; the caller holds mu.
func (l *Live) flush() {
	if l.board.Pending() {
		l.render(l.now())
	}
}

// Close stops the ticker and prints the last log lines and the final table. It may be called
// more than once; events printed afterwards still print their lines.
func (l *Live) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.render(l.now())
}
