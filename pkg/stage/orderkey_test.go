package stage

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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

// keyedMsg is a delivered message with a subject and headers, all the order keys read.
type keyedMsg struct {
	jetstream.Msg
	subject string
	header  nats.Header
}

func (m keyedMsg) Subject() string      { return m.subject }
func (m keyedMsg) Headers() nats.Header { return m.header }

func TestByRollout(t *testing.T) {
	recorded := keyedMsg{subject: "sealane.deploy.release_recorded.c1.app.web", header: nats.Header{"ce-rolloutid": {"ro-1"}}}
	if got := ByRollout(recorded); got != "ro-1" {
		t.Errorf("ByRollout(a rollout's event) = %q, want its rollout", got)
	}
	other := keyedMsg{subject: "sealane.deploy.release_recorded.c1.app.web", header: nats.Header{}}
	if got := ByRollout(other); got != "c1.app.web" {
		t.Errorf("ByRollout(an event of no rollout) = %q, want its release", got)
	}
}
