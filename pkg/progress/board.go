package progress

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/sealane/sealane/events"
)

// The wait conditions of the tracker (events.Wait.Until), in the order their tables are shown.
const (
	untilReady    = "ready"
	untilPresent  = "present"
	untilAbsent   = "absent"
	untilComplete = "complete"
)

var untilOrder = map[string]int{untilReady: 0, untilPresent: 1, untilAbsent: 2, untilComplete: 3}

// maxField bounds the quoted free-text INFO fields (Status, LastError, Reason) in the table.
const maxField = 160

// Board gathers a deploy's events and renders them as werf does: a "Progress status" block with
// one table per wait condition, and blocks with the log lines and Kubernetes events received
// since the previous render. It is not safe for concurrent use; Live wraps it for that.
type Board struct {
	color     bool
	namespace string // the release namespace: resources elsewhere get Namespace: in INFO
	start     time.Time

	rows  []*row
	index map[string]*row

	logs     []*logBlock
	logIndex map[string]*logBlock

	dirty    bool // rows changed since the last render
	finished bool // the deploy ended (succeeded, failed or recorded)
}

// NewBoard returns an empty board; color turns on ANSI colours for the STATE column.
func NewBoard(color bool) *Board {
	b := &Board{color: color}
	b.reset()
	return b
}

func (b *Board) reset() {
	b.rows, b.index = nil, map[string]*row{}
	b.dirty, b.finished, b.start = false, false, time.Time{}
}

// row is one tracked resource under one wait condition.
type row struct {
	ref         events.ResourceRef
	until       string
	state       events.State
	ready       int32
	desired     int32
	message     string
	errors      int
	lastError   string
	reason      string // why the resource failed the deploy (PhaseTracked, DeployFailed)
	pods        []events.PodProgress
	nonBlocking bool
	shown       bool // a READY row was rendered once: hidden from now on
}

// signature is what the row shows, to tell whether an event changed it.
func (r *row) signature() string {
	return fmt.Sprintf("%s|%d/%d|%s|%d|%s|%s|%v|%+v", r.state, r.ready, r.desired, r.message,
		r.errors, r.lastError, r.reason, r.nonBlocking, r.pods)
}

// logBlock holds the lines of one container (or the events) of one resource since the last render.
type logBlock struct {
	title   string
	entries []logEntry
	pods    map[string]bool
}

type logEntry struct {
	pod     string
	text    string
	dropped int // a "(N lines dropped)" marker rather than a line
}

// Add takes in one event. A DeployRequested starts a fresh table (an auto-rollback after a
// failed deploy is a second request followed by the same output).
func (b *Board) Add(e cloudevents.Event) {
	if t, err := events.TargetOf(e); err == nil && b.namespace == "" {
		b.namespace = t.Namespace
	}
	if b.start.IsZero() && !e.Time().IsZero() {
		b.start = e.Time()
	}
	switch events.Type(e.Type()) {
	case events.DeployRequested:
		b.reset()
		if t, err := events.TargetOf(e); err == nil {
			b.namespace = t.Namespace
		}
		b.start = e.Time()
	case events.PhaseApplied:
		var d events.PhaseAppliedData
		if events.DecodeData(e, &d) != nil {
			return
		}
		for _, w := range d.Waits {
			r := b.row(w.Resource, w.Until)
			if r.state != events.StateWaiting || r.shown {
				*r = row{ref: r.ref, until: r.until, nonBlocking: r.nonBlocking}
			}
			r.state = events.StateWaiting
			b.dirty = true
		}
	case events.ResourceProgressed:
		var d events.ProgressedData
		if events.DecodeData(e, &d) != nil {
			return
		}
		r := b.tracked(d.Resource, d.Until)
		before := r.signature()
		if d.State != events.StateReady || r.state != events.StateReady {
			r.shown = false
		}
		r.state, r.ready, r.desired, r.message = d.State, d.Ready, d.Desired, d.Message
		r.errors, r.lastError, r.pods, r.nonBlocking = d.Errors, d.LastError, d.Pods, d.NonBlocking
		if d.State != events.StateFailed {
			r.reason = ""
		}
		if r.signature() != before {
			b.dirty = true
		}
	case events.PhaseTracked:
		var d events.PhaseTrackedData
		if events.DecodeData(e, &d) == nil {
			b.fail(d.Failures)
		}
	case events.DeployFailed:
		var d events.FailedData
		if events.DecodeData(e, &d) == nil {
			b.fail(d.Failures)
		}
		b.finished = true
	case events.DeploySucceeded, events.ReleaseRecorded:
		b.finished = true
	case events.LogLines:
		var d events.LogLinesData
		if events.DecodeData(e, &d) == nil {
			b.addLogs(d)
		}
	}
}

// row finds or adds the row of ref under the condition until.
func (b *Board) row(ref events.ResourceRef, until string) *row {
	if until == "" {
		until = untilReady
	}
	key := ref.String() + "\x00" + until
	r, ok := b.index[key]
	if !ok {
		r = &row{ref: ref, until: until, state: events.StateWaiting}
		b.index[key] = r
		b.rows = append(b.rows, r)
	}
	return r
}

// tracked finds the row a progress report is about. A report without a condition is about the
// latest wait on the resource, whatever its condition.
func (b *Board) tracked(ref events.ResourceRef, until string) *row {
	if until == "" {
		for i := len(b.rows) - 1; i >= 0; i-- {
			if b.rows[i].ref == ref {
				return b.rows[i]
			}
		}
	}
	return b.row(ref, until)
}

// fail marks the resources that failed the deploy, adding those the table did not track.
func (b *Board) fail(fs []events.ResourceFailure) {
	for _, f := range fs {
		if f.Resource.Name == "" {
			continue // a failure of the tracker itself: the stage line says it
		}
		var matched []*row
		for _, r := range b.rows {
			if r.ref == f.Resource && r.state != events.StateReady {
				matched = append(matched, r)
			}
		}
		if len(matched) == 0 {
			matched = []*row{b.row(f.Resource, untilReady)}
		}
		for _, r := range matched {
			before := r.signature()
			r.state, r.reason, r.shown = events.StateFailed, f.Reason, false
			if r.signature() != before {
				b.dirty = true
			}
		}
	}
}

func (b *Board) addLogs(d events.LogLinesData) {
	for i, l := range d.Lines {
		key, title := d.Resource.String()+"\x00"+d.Container, "Logs for "+kindName(d.Resource)
		if d.Container != "" {
			title += ", container/" + d.Container
		}
		switch l.Stream {
		case events.LogEvent:
			key, title = d.Resource.String()+"\x00events", "Events for "+kindName(d.Resource)
		case events.LogNotice:
			key, title = d.Resource.String()+"\x00notes", "Note on "+kindName(d.Resource)
		}
		blk := b.logBlock(key, title)
		if i == 0 && d.Dropped > 0 {
			blk.entries = append(blk.entries, logEntry{pod: d.Pod, dropped: d.Dropped})
		}
		blk.entries = append(blk.entries, logEntry{pod: d.Pod, text: l.Text})
		if d.Pod != "" {
			blk.pods[d.Pod] = true
		}
	}
	if len(d.Lines) == 0 && d.Dropped > 0 {
		title := "Logs for " + kindName(d.Resource)
		if d.Container != "" {
			title += ", container/" + d.Container
		}
		blk := b.logBlock(d.Resource.String()+"\x00"+d.Container, title)
		blk.entries = append(blk.entries, logEntry{pod: d.Pod, dropped: d.Dropped})
	}
}

func (b *Board) logBlock(key, title string) *logBlock {
	if b.logIndex == nil {
		b.logIndex = map[string]*logBlock{}
	}
	blk, ok := b.logIndex[key]
	if !ok {
		blk = &logBlock{title: title, pods: map[string]bool{}}
		b.logIndex[key] = blk
		b.logs = append(b.logs, blk)
	}
	return blk
}

// Pending reports whether Render has anything new to show: log lines, or rows that changed
// since the last render.
func (b *Board) Pending() bool { return len(b.logs) > 0 || b.dirty }

// Render returns the log blocks received since the last render followed by the "Progress
// status" block, or "" when there is nothing to show. It consumes what it shows: log lines are
// shown once, and so is a resource that became ready. Once the deploy has ended the status block
// is shown only when a row changed; now only sets the elapsed time in its title.
func (b *Board) Render(now time.Time) string {
	var out strings.Builder
	for _, blk := range b.logs {
		b.renderLogs(&out, blk)
	}
	b.logs, b.logIndex = nil, nil

	var visible []*row
	for _, r := range b.rows {
		if !(r.state == events.StateReady && r.shown) {
			visible = append(visible, r)
		}
	}
	if len(visible) > 0 && (b.dirty || !b.finished) {
		b.renderStatus(&out, visible, now)
		for _, r := range visible {
			if r.state == events.StateReady {
				r.shown = true
			}
		}
	}
	b.dirty = false
	return out.String()
}

func (b *Board) renderLogs(out *strings.Builder, blk *logBlock) {
	fmt.Fprintf(out, "┌ %s\n", blk.title)
	multi := len(blk.pods) > 1
	for _, en := range blk.entries {
		if en.dropped > 0 {
			fmt.Fprintf(out, "│ (%d lines dropped)\n", en.dropped)
			continue
		}
		prefix := ""
		if multi && en.pod != "" {
			prefix = "[" + en.pod + "] "
		}
		for _, l := range strings.Split(strings.TrimRight(en.text, "\r\n"), "\n") {
			fmt.Fprintf(out, "│ %s%s\n", prefix, strings.TrimRight(l, "\r"))
		}
	}
	out.WriteString("└\n")
}

// cells is one table line before padding.
type cells struct{ resource, state, info string }

func (b *Board) renderStatus(out *strings.Builder, visible []*row, now time.Time) {
	groups := map[string][]cells{}
	var conds []string
	for _, r := range visible {
		if _, ok := groups[r.until]; !ok {
			conds = append(conds, r.until)
		}
		groups[r.until] = append(groups[r.until], b.rowCells(r)...)
	}
	sort.SliceStable(conds, func(i, j int) bool {
		oi, iok := untilOrder[conds[i]]
		oj, jok := untilOrder[conds[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return conds[i] < conds[j]
	})
	// One width for all tables, so that their columns line up.
	wRes, wState := 0, len("STATE")
	for _, c := range conds {
		wRes = max(wRes, width(header(c)))
		for _, l := range groups[c] {
			wRes, wState = max(wRes, width(l.resource)), max(wState, width(l.state))
		}
	}
	title := "Progress status"
	if !b.start.IsZero() && now.After(b.start) {
		title += " (" + now.Sub(b.start).Round(time.Second).String() + ")"
	}
	fmt.Fprintf(out, "┌ %s\n", title)
	for i, c := range conds {
		if i > 0 {
			out.WriteString("│\n")
		}
		b.line(out, cells{header(c), "STATE", "INFO"}, wRes, wState, false)
		for _, l := range groups[c] {
			b.line(out, l, wRes, wState, true)
		}
	}
	out.WriteString("└\n")
}

func (b *Board) line(out *strings.Builder, c cells, wRes, wState int, colored bool) {
	state := c.state
	if colored {
		state = b.paint(c.state)
	}
	s := "│ " + pad(c.resource, wRes) + "  " + state
	if c.info != "" {
		s += strings.Repeat(" ", wState-width(c.state)) + "  " + c.info
	}
	out.WriteString(strings.TrimRight(s, " ") + "\n")
}

func header(until string) string { return "RESOURCE (→" + strings.ToUpper(until) + ")" }

// rowCells returns the line of r and of its pods.
func (b *Board) rowCells(r *row) []cells {
	name := kindName(r.ref)
	if r.nonBlocking {
		name += " (non-blocking)"
	}
	var info []string
	if r.ref.Namespace != "" && r.ref.Namespace != b.namespace {
		info = append(info, "Namespace:"+r.ref.Namespace)
	}
	// The message is left out once ready, and when the failure reason or the last error says it.
	if r.message != "" && r.state != events.StateReady && !strings.Contains(r.reason, r.message) && !strings.Contains(r.lastError, r.message) {
		info = append(info, "Status:"+quoteIfSpaced(r.message))
	}
	if r.desired > 0 || r.ready > 0 {
		info = append(info, fmt.Sprintf("Ready:%d/%d", r.ready, r.desired))
	}
	if r.errors > 0 {
		info = append(info, fmt.Sprintf("Errors:%d", r.errors))
	}
	if r.lastError != "" {
		info = append(info, "LastError:"+quote(r.lastError))
	}
	if r.reason != "" && r.reason != r.lastError {
		info = append(info, "Reason:"+quote(r.reason))
	}
	lines := []cells{{name, stateWord(r), strings.Join(info, " ")}}
	for _, p := range r.pods {
		var pi []string
		if p.Message != "" {
			pi = append(pi, "Status:"+quoteIfSpaced(p.Message))
		}
		if p.Desired > 0 {
			pi = append(pi, fmt.Sprintf("Ready:%d/%d", p.Ready, p.Desired))
		}
		if p.Restarts > 0 {
			pi = append(pi, fmt.Sprintf("Restarts:%d", p.Restarts))
		}
		lines = append(lines, cells{"  • Pod/" + p.Name, string(p.State), strings.Join(pi, " ")})
	}
	return lines
}

// stateWord is the STATE of a row: a reached condition other than ready says its name
// (PRESENT, ABSENT, COMPLETE), as werf's tables do.
func stateWord(r *row) string {
	if r.state == events.StateReady && r.until != untilReady {
		return strings.ToUpper(r.until)
	}
	return string(r.state)
}

// ANSI colours of the STATE column.
const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

func (b *Board) paint(state string) string {
	if !b.color {
		return state
	}
	switch state {
	case string(events.StateWaiting):
		return ansiYellow + state + ansiReset
	case string(events.StateFailed):
		return ansiRed + state + ansiReset
	case string(events.StateReady), "PRESENT", "ABSENT", "COMPLETE":
		return ansiGreen + state + ansiReset
	}
	return state
}

func kindName(r events.ResourceRef) string { return r.Kind + "/" + r.Name }

func width(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, w int) string { return s + strings.Repeat(" ", max(0, w-width(s))) }

// quote puts a free-text field in double quotes on one line, cut to maxField characters.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxField {
		s = string([]rune(s)[:maxField-1]) + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `'`) + `"`
}

func quoteIfSpaced(s string) string {
	if strings.ContainsAny(s, " \t\n\"") {
		return quote(s)
	}
	return s
}
