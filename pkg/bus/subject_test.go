package bus

import "testing"

func TestSubjectsOverlap(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"sealane.deploy.>", "sealane.deadletter.>", false},
		{"sealane.>", "sealane.deadletter.>", true},
		{"sealane.*.x", "sealane.deadletter.>", true},
		{"sealane.*", "sealane.deadletter.>", false},
		{"a.b.c", "a.*.c", true},
		{"a.b", "a.b.c", false},
		{">", "x", true},
	}
	for _, tt := range tests {
		if got := subjectsOverlap(tt.a, tt.b); got != tt.want {
			t.Errorf("subjectsOverlap(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestValidSubject(t *testing.T) {
	tests := []struct {
		s         string
		wildcards bool
		want      bool
	}{
		{"sealane.deploy.requested.c1.ns.api", false, true},
		{"sealane.deploy.>", true, true},
		{"sealane.deploy.>", false, false},
		{"sealane.*.x", true, true},
		{"a.>.b", true, false},
		{"a..b", true, false},
		{"a.b*", true, false},
		{"a b", true, false},
		{"", true, false},
	}
	for _, tt := range tests {
		if got := validSubject(tt.s, tt.wildcards); got != tt.want {
			t.Errorf("validSubject(%q, %v) = %v, want %v", tt.s, tt.wildcards, got, tt.want)
		}
	}
}
