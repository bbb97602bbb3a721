package stage

import "testing"

func TestReleaseOf(t *testing.T) {
	for subject, want := range map[string]string{
		"sealane.deploy.requested.sandbox-1.shop.web":      "sandbox-1.shop.web",
		"sealane.p.ab12.deploy.phase_applied.c.team-a.app": "c.team-a.app",
		"sealane.deploy.rollout_requested._._._":           "_._._",
		"a.b":                                              "a.b",
	} {
		if got := releaseOf(subject); got != want {
			t.Errorf("releaseOf(%q) = %q, want %q", subject, got, want)
		}
	}
}
