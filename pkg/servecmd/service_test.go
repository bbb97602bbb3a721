package servecmd

import (
	"testing"
)

// A service binary takes no arguments but flags and refuses a bad log level before connecting
// (a NATS that does not answer it waits for).
func TestRunExitCodes(t *testing.T) {
	t.Setenv("SEALANE_NATS_URL", "")
	t.Setenv(AckWaitEnv, "")
	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"--help"}, 0},
		{"an argument", []string{"applier"}, 2},
		{"an unknown flag", []string{"--no-such-flag"}, 2},
		{"a bad log level", []string{"--log-level", "loud"}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Run(tt.args, "webhook"); got != tt.want {
				t.Errorf("Run(%q) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}

// $SEALANE_ACK_WAIT sets --ack-wait's default; a malformed one is refused unless the flag is given.
func TestAckWaitEnv(t *testing.T) {
	t.Setenv(AckWaitEnv, "45s")
	if got := Service("applier").Flags().Lookup("ack-wait").DefValue; got != "45s" {
		t.Errorf("--ack-wait default %s, want 45s from $%s", got, AckWaitEnv)
	}
	t.Setenv(AckWaitEnv, "soon")
	if got := Run([]string{"--nats", "nats://127.0.0.1:1"}, "applier"); got != 2 {
		t.Errorf("a malformed $%s: exit %d, want 2", AckWaitEnv, got)
	}
}
