package githook

import (
	"net/http"
	"testing"
	"time"
)

// TestContentDigest: the digest follows what the signature covers. Unsigned headers (a
// delivery id, a timestamp) do not change it; the body, the provider and a Standard Webhooks
// webhook-id do.
func TestContentDigest(t *testing.T) {
	plain, err := NewSecret("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	std, err := NewSecret("whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"ref":"refs/heads/main"}`)
	req := func(h ...string) Request { return Request{Header: header(h...), Body: body, Now: time.Now()} }
	same := func(name, provider string, a, b Request, secrets []Secret, want bool) {
		t.Helper()
		if got := ContentDigest(provider, a, secrets) == ContentDigest(provider, b, secrets); got != want {
			t.Errorf("%s: digests equal %t, want %t", name, got, want)
		}
	}
	same("github, another delivery id", GitHub, req("X-GitHub-Delivery", "a"), req("X-GitHub-Delivery", "b"), []Secret{plain}, true)
	same("bitbucket, another request uuid", Bitbucket, req("X-Request-UUID", "a"), req("X-Request-UUID", "b"), []Secret{plain}, true)
	same("generic-hmac, another delivery id", GenericHMAC, req("X-Delivery-Id", "a"), req("X-Delivery-Id", "b"), []Secret{plain}, true)
	same("gitlab token, another idempotency key", GitLab, req("Idempotency-Key", "a"), req("Idempotency-Key", "b"), []Secret{plain}, true)
	same("gitlab signed, another timestamp", GitLab,
		req("webhook-id", "w", "webhook-timestamp", "1", "webhook-signature", "v1,x"),
		req("webhook-id", "w", "webhook-timestamp", "2", "webhook-signature", "v1,y"), []Secret{std}, true)
	same("gitlab signed, another webhook-id", GitLab,
		req("webhook-id", "w1", "webhook-signature", "v1,x"), req("webhook-id", "w2", "webhook-signature", "v1,x"), []Secret{std}, false)
	same("standard webhooks, another webhook-id", StandardWebhooks, req("webhook-id", "w1"), req("webhook-id", "w2"), []Secret{std}, false)
	other := Request{Header: http.Header{}, Body: []byte(`{"ref":"refs/heads/dev"}`)}
	same("github, another body", GitHub, req(), other, []Secret{plain}, false)
	if ContentDigest(GitHub, req(), nil) == ContentDigest(Bitbucket, req(), nil) {
		t.Error("github and bitbucket digests of one body are equal, want the provider in the digest")
	}
}
