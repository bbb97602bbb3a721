package podlogs

import (
	"strings"
	"time"
	"unicode/utf8"
)

// ellipsis marks a line cut to the length limit.
const ellipsis = "…"

// splitTimestamp splits a line read with PodLogOptions.Timestamps ("<RFC3339Nano> <text>") into
// its time and text. A line without a parsable time is all text, with ok false.
func splitTimestamp(line string) (t time.Time, text string, ok bool) {
	i := strings.IndexByte(line, ' ')
	if i <= 0 {
		ts, err := time.Parse(time.RFC3339Nano, line) // an empty line: only the time
		if err != nil {
			return time.Time{}, line, false
		}
		return ts, "", true
	}
	ts, err := time.Parse(time.RFC3339Nano, line[:i])
	if err != nil {
		return time.Time{}, line, false
	}
	return ts, line[i+1:], true
}

// cut shortens s to at most max bytes, ending in "…" when cut, without splitting a UTF-8
// sequence. max <= 0 means no limit.
func cut(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	n := max - len(ellipsis)
	if n < 0 {
		n = 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + ellipsis
}

// rateLimit counts lines per one-second window and says which go over the limit.
type rateLimit struct {
	max    int
	window time.Time
	count  int
}

// allow reports whether one more line may pass at now. max <= 0 means no limit.
func (r *rateLimit) allow(now time.Time) bool {
	if r.max <= 0 {
		return true
	}
	if now.Sub(r.window) >= time.Second || now.Before(r.window) {
		r.window, r.count = now, 0
	}
	if r.count >= r.max {
		return false
	}
	r.count++
	return true
}
