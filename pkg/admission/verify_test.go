package admission

import (
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nkeys"

	"github.com/sealane/sealane/events"
)

var target = events.Target{Cluster: "prod", Namespace: "team-a", Release: "web"}

func request(t *testing.T, at time.Time, kp nkeys.KeyPair) cloudevents.Event {
	t.Helper()
	e, err := events.New(events.DeployRequested, events.Meta{ID: "d1.requested", Source: "/sealane/cli", CorrelationID: "d1",
		Target: target, Time: at}, events.RequestedData{Target: target})
	if err != nil {
		t.Fatal(err)
	}
	if kp != nil {
		if err := events.SignRequest(&e, kp); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func TestVerifier(t *testing.T) {
	ci, _ := nkeys.CreateUser()
	ciPub, _ := ci.PublicKey()
	stranger, _ := nkeys.CreateUser()
	strangerPub, _ := stranger.PublicKey()
	keys, err := ParseClientKeys([]byte("ci-deployer: " + ciPub + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	v := Verifier{Keys: keys, MaxAge: 5 * time.Minute}
	for _, tt := range []struct {
		name    string
		v       Verifier
		e       cloudevents.Event
		handed  bool
		want    string
		refusal []string
	}{
		{"signed by a registered key", v, request(t, now.Add(-time.Minute), ci), false, "ci-deployer", nil},
		{"no client keys: nothing checked", Verifier{}, request(t, now.Add(-time.Hour), nil), false, "", nil},
		{"unsigned", v, request(t, now, nil), false, "", []string{"request d1.requested is not signed", "--client-keys", "SEALANE_NATS_CREDS"}},
		{"unknown key", v, request(t, now, stranger), false, "", []string{"signed by key " + strangerPub, "no registered client key", "--client-keys"}},
		{"too old", v, request(t, now.Add(-6*time.Minute), ci), false, "", []string{"of client ci-deployer was signed at 2026-03-01T11:54:00Z, 6m0s ago",
			"maximum age 5m0s", "send a new request"}},
		{"default maximum age", Verifier{Keys: keys}, request(t, now.Add(-DefaultMaxAge-time.Second), ci), false, "", []string{"maximum age 5m0s"}},
		{"from the future", v, request(t, now.Add(2*time.Minute), ci), false, "", []string{"2m0s in the future", "check the client's clock"}},
		{"a little ahead: clock skew", v, request(t, now.Add(30*time.Second), ci), false, "ci-deployer", nil},
		{"old but handed over from the queue", v, request(t, now.Add(-time.Hour), ci), true, "ci-deployer", nil},
		{"handed over, unknown key", v, request(t, now.Add(-time.Hour), stranger), true, "", []string{"no registered client key"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.v.Verify(tt.e, now, tt.handed)
			if tt.refusal == nil {
				if err != nil || got != tt.want {
					t.Fatalf("Verify = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Verify = %q, want a refusal", got)
			}
			for _, w := range tt.refusal {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q, want it to contain %q", err, w)
				}
			}
		})
	}
	t.Run("bad signature", func(t *testing.T) {
		e := request(t, now, ci)
		e.SetSubject(events.Target{Cluster: "prod", Namespace: "team-b", Release: "web"}.String())
		_, err := v.Verify(e, now, false)
		if err == nil || !strings.Contains(err.Error(), "does not verify") || !strings.Contains(err.Error(), "send the request again") {
			t.Fatalf("Verify = %v, want a bad signature", err)
		}
	})
}

func TestParseClientKeys(t *testing.T) {
	a, _ := nkeys.CreateUser()
	aPub, _ := a.PublicKey()
	b, _ := nkeys.CreateUser()
	bPub, _ := b.PublicKey()
	seed, _ := a.Seed()
	for _, tt := range []struct {
		name, yaml, err string
	}{
		{"one key and a list", "ci: " + aPub + "\nalice:\n  - " + bPub + "\n", ""},
		{"a seed by mistake", "ci: " + string(seed) + "\n", "is not a public user nkey"},
		{"not a key", "ci: hello\n", "is not a public user nkey"},
		{"duplicate key", "ci: " + aPub + "\nalice: [" + aPub + "]\n", "is listed for both alice and ci"},
		{"empty list", "ci: []\n", "client ci: no key"},
		{"bad name", "ci deployer: " + aPub + "\n", `client "ci deployer"`},
		{"not a map", "- " + aPub + "\n", "want a map of client name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			keys, err := ParseClientKeys([]byte(tt.yaml))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if n, _ := keys.Client(aPub); n != "ci" {
					t.Errorf("Client(a) = %q, want ci", n)
				}
				if n, _ := keys.Client(bPub); n != "alice" || keys.Len() != 2 {
					t.Errorf("Client(b) = %q (%d keys), want alice of 2", n, keys.Len())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ParseClientKeys = %v, want %q", err, tt.err)
			}
			if strings.Contains(err.Error(), string(seed)) {
				t.Fatalf("the error shows the seed: %v", err)
			}
		})
	}
}

func TestCheckSubject(t *testing.T) {
	odd := events.Target{Cluster: "prod", Namespace: "team.a", Release: "web"}
	for _, tt := range []struct {
		name          string
		subject       string
		attr, payload events.Target
		err           string
	}{
		{"agree", "sealane.deploy.requested.prod.team-a.web", target, target, ""},
		{"sanitised names agree by token", "sealane.deploy.requested.prod.team_a.web", odd, odd, ""},
		{"payload targets another namespace", "sealane.deploy.requested.prod.team-a.web", target,
			events.Target{Cluster: "prod", Namespace: "team-b", Release: "web"},
			"payload targets clusters/prod/namespaces/team-b/releases/web (subject sealane.deploy.requested.prod.team-b.web), but it was published on sealane.deploy.requested.prod.team-a.web"},
		{"payload targets another cluster", "sealane.deploy.requested.prod.team-a.web", target,
			events.Target{Cluster: "staging", Namespace: "team-a", Release: "web"}, "but it was published on"},
		{"payload targets another release", "sealane.deploy.requested.prod.team-a.web", target,
			events.Target{Cluster: "prod", Namespace: "team-a", Release: "api"}, "but it was published on"},
		{"another type's subject", "sealane.deploy.rendered.prod.team-a.web", target, target, "but it was published on"},
		{"attribute disagrees", "sealane.deploy.requested.prod.team-a.web", events.Target{Cluster: "prod", Namespace: "team-a", Release: "api"}, target,
			"but its CloudEvents subject says clusters/prod/namespaces/team-a/releases/api"},
		{"attribute differs in a sanitised character", "sealane.deploy.requested.prod.team_a.web", events.Target{Cluster: "prod", Namespace: "team_a", Release: "web"}, odd,
			"but its CloudEvents subject says"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckSubject(tt.subject, tt.attr, tt.payload)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("CheckSubject = %v, want %q", err, tt.err)
			}
		})
	}
}
