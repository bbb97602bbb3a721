package main

import "testing"

func TestProgressFlagsColor(t *testing.T) {
	for mode, want := range map[string]bool{"always": true, "never": false, "auto": false} {
		got, err := progressFlags{color: mode}.useColor()
		if err != nil || got != want {
			t.Errorf("--color %s: %v, %v; want %v (go test's stdout is not a terminal)", mode, got, err, want)
		}
	}
	if _, err := (progressFlags{color: "yes"}).useColor(); err == nil {
		t.Error("--color yes accepted")
	}
}
