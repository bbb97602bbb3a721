package apply

import "testing"

func TestParseMethod(t *testing.T) {
	for in, want := range map[string]Method{"": ServerSideApply, "ssa": ServerSideApply, "Server-Side": ServerSideApply,
		"3wm": ThreeWayMerge, "three-way-merge": ThreeWayMerge} {
		if got, err := ParseMethod(in); err != nil || got != want {
			t.Errorf("ParseMethod(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMethod("replace"); err == nil {
		t.Error(`ParseMethod("replace"): no error`)
	}
}
