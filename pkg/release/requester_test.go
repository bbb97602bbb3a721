package release

import (
	"strings"
	"testing"
)

func TestRequesterLabels(t *testing.T) {
	for _, tt := range []struct {
		by       string
		verified bool
		want     map[string]string
	}{
		{"", false, nil},
		{"ci-deployer", true, map[string]string{LabelRequestedBy: "ci-deployer", LabelVerified: "true"}},
		{"root@build-7", false, map[string]string{LabelRequestedBy: "root_build-7", LabelVerified: "false"}},
		{"@alice@", false, map[string]string{LabelRequestedBy: "alice", LabelVerified: "false"}},
		{strings.Repeat("a", 70) + "@x", false, map[string]string{LabelRequestedBy: strings.Repeat("a", 63), LabelVerified: "false"}},
	} {
		got := RequesterLabels(tt.by, tt.verified)
		if len(got) != len(tt.want) || got[LabelRequestedBy] != tt.want[LabelRequestedBy] || got[LabelVerified] != tt.want[LabelVerified] {
			t.Errorf("RequesterLabels(%q, %v) = %v, want %v", tt.by, tt.verified, got, tt.want)
		}
	}
}
