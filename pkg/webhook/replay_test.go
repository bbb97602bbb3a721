package webhook

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/githook"
)

// TestIntakeReplayIsDuplicate: a captured signed push replayed with a fresh (unsigned)
// delivery id is a duplicate of the first delivery, for each provider whose signature does
// not cover the id; a signed GitLab delivery is known by its signed webhook-id, whatever
// Idempotency-Key it carries. Only the first delivery of each starts a deploy.
func TestIntakeReplayIsDuplicate(t *testing.T) {
	in := newIntake(t)
	fixture := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "githook", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	gen := []byte(`{"repository":"acme/shop","url":"https://git.example.com/acme/shop.git","ref":"refs/heads/main","commit":"` + shaA + `"}`)
	bb, gl := fixture("bitbucket_cloud_push.json"), fixture("gitlab_push.json")
	glHeaders := func(idempotency string) http.Header {
		ts := time.Now()
		return http.Header{"X-Gitlab-Event": {"Push Hook"}, "Idempotency-Key": {idempotency}, "Webhook-Id": {"msg-gl-1"},
			"Webhook-Timestamp": {itoa(ts.Unix())}, "Webhook-Signature": {githook.SignStandard(swKey, "msg-gl-1", ts, gl)}}
	}
	push := githubPush("refs/heads/main", shaA, false)
	cases := []struct {
		name, receiver string
		body           []byte
		headers        func(id string) http.Header
	}{
		{"github", "gh", push, func(id string) http.Header { return githubHeaders(ghOld, id, push) }},
		{"bitbucket", "bb", bb, func(id string) http.Header {
			return http.Header{"X-Event-Key": {"repo:push"}, "X-Request-Uuid": {id}, "X-Hub-Signature": {githook.SignHMAC([]byte(hmacKey), bb)}}
		}},
		{"generic-hmac", "gen", gen, func(id string) http.Header {
			return http.Header{"X-Delivery-Id": {id}, "X-Signature": {githook.SignHMAC([]byte(hmacKey), gen)}}
		}},
		{"gitlab signed", "gl", gl, glHeaders},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, first, _ := in.send(t, c.receiver, c.headers("first-id"), c.body)
			if code != http.StatusAccepted || len(first.DeployIDs) == 0 {
				t.Fatalf("first delivery: %d %+v, want 202", code, first)
			}
			for _, id := range []string{"fresh-id-1", "fresh-id-2"} {
				code, again, _ := in.send(t, c.receiver, c.headers(id), c.body)
				if code != http.StatusOK || again.Status != "duplicate" || len(again.DeployIDs) == 0 || again.DeployIDs[0] != first.DeployIDs[0] {
					t.Errorf("replay under delivery id %s: %d %+v, want 200 duplicate of %s", id, code, again, first.DeployIDs[0])
				}
			}
		})
	}
	if n := len(in.events(t, events.DeployRequested)); n != len(cases) {
		t.Errorf("%d deploy requests in the stream, want %d (one per provider)", n, len(cases))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
