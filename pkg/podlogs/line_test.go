package podlogs

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSplitTimestamp(t *testing.T) {
	ts := time.Date(2026, 11, 23, 18, 35, 36, 906495764, time.UTC)
	tests := []struct {
		line   string
		t      time.Time
		text   string
		parsed bool
	}{
		{"2026-11-23T18:35:36.906495764Z sealane sandbox container started", ts, "sealane sandbox container started", true},
		{"2026-11-23T18:35:36.906495764Z  two spaces", ts, " two spaces", true},
		{"2026-11-23T18:35:36.906495764Z ", ts, "", true},
		{"2026-11-23T18:35:36.906495764Z", ts, "", true},
		{"no time here", time.Time{}, "no time here", false},
		{"", time.Time{}, "", false},
	}
	for _, tt := range tests {
		gt, text, ok := splitTimestamp(tt.line)
		if !gt.Equal(tt.t) || text != tt.text || ok != tt.parsed {
			t.Errorf("splitTimestamp(%q) = %v, %q, %v; want %v, %q, %v", tt.line, gt, text, ok, tt.t, tt.text, tt.parsed)
		}
	}
}

func TestCut(t *testing.T) {
	tests := []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven chars", 10, "eleven " + ellipsis}, // 7 bytes + 3 bytes of "…"
		{"ЖЖЖЖЖЖ", 8, "ЖЖ" + ellipsis},             // 2-byte runes are not split
		{"ЖЖЖЖЖЖ", 6, "Ж" + ellipsis},
		{"abc", 0, "abc"},
		{"abcdef", 2, ellipsis},
	}
	for _, tt := range tests {
		if got := cut(tt.s, tt.max); got != tt.want {
			t.Errorf("cut(%q, %d) = %q, want %q", tt.s, tt.max, got, tt.want)
		}
	}
}

func TestRateLimit(t *testing.T) {
	r := rateLimit{max: 3}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var got []bool
	for _, ms := range []int{0, 10, 20, 30, 999, 1000, 1001, 1002, 1003} {
		got = append(got, r.allow(at(ms)))
	}
	want := []bool{true, true, true, false, false, true, true, true, false}
	if !cmp.Equal(got, want) {
		t.Errorf("allow = %v, want %v", got, want)
	}
	unlimited := rateLimit{}
	for i := 0; i < 1000; i++ {
		if !unlimited.allow(t0) {
			t.Fatal("no limit refused a line")
		}
	}
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", 40000) // longer than the bufio buffer
	in := "one\r\ntwo\n\n" + long + "\nlast without newline"
	type line struct {
		text string
		cut  bool
	}
	var got []line
	err := readLines(strings.NewReader(in), 10, func(text string, c bool) bool {
		got = append(got, line{text, c})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []line{{"one", false}, {"two", false}, {"", false}, {"xxxxxxxxxx", true}, {"last witho", true}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(line{})); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	n := 0
	_ = readLines(strings.NewReader("a\nb\nc\n"), 10, func(string, bool) bool { n++; return n < 2 })
	if n != 2 {
		t.Errorf("emit called %d times after asking to stop at 2", n)
	}
}
