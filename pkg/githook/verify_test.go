package githook

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// verifyCase is one named Verify test.
type verifyCase struct {
	name     string
	provider string
	header   http.Header
	body     []byte
	secrets  []string
	now      time.Time // now when zero
	ok       bool
}

func runVerifyCases(t *testing.T, cases []verifyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			at := tc.now
			if at.IsZero() {
				at = now
			}
			err := Verify(tc.provider, Request{Header: tc.header, Body: tc.body, Now: at}, secrets(t, tc.secrets...))
			switch {
			case tc.ok && err != nil:
				t.Fatalf("Verify() error = %v, want nil", err)
			case !tc.ok && !errors.Is(err, ErrUnauthorized):
				t.Fatalf("Verify() error = %v, want ErrUnauthorized", err)
			}
		})
	}
}

func TestVerifyHMACProviders(t *testing.T) {
	body := fixture(t, "github_push.json")
	good := SignGitHub(plainSecret, body)
	sha1MAC := hmac.New(sha1.New, plainSecret)
	sha1MAC.Write(body)
	sha1Sig := "sha1=" + hex.EncodeToString(sha1MAC.Sum(nil))
	plain, other := string(plainSecret), string(otherSecret)
	runVerifyCases(t, []verifyCase{
		{name: "github", provider: GitHub, header: header("X-Hub-Signature-256", good), body: body, secrets: []string{plain}, ok: true},
		{name: "github uppercase hex", provider: GitHub, body: body, secrets: []string{plain}, ok: true,
			header: header("X-Hub-Signature-256", "sha256="+strings.ToUpper(strings.TrimPrefix(good, "sha256=")))},
		{name: "github second rotation secret", provider: GitHub, header: header("X-Hub-Signature-256", good), body: body,
			secrets: []string{other, plain}, ok: true},
		{name: "github wrong secret", provider: GitHub, header: header("X-Hub-Signature-256", good), body: body, secrets: []string{other}},
		{name: "github body changed", provider: GitHub, header: header("X-Hub-Signature-256", good), body: append([]byte(" "), body...),
			secrets: []string{plain}},
		{name: "github sha1 header only", provider: GitHub, header: header("X-Hub-Signature", sha1Sig), body: body, secrets: []string{plain}},
		{name: "github sha256 in the sha1 header", provider: GitHub, header: header("X-Hub-Signature", good), body: body, secrets: []string{plain}},
		{name: "github sha1 inside X-Hub-Signature-256", provider: GitHub, header: header("X-Hub-Signature-256", sha1Sig), body: body,
			secrets: []string{plain}},
		{name: "github uppercase prefix", provider: GitHub, body: body, secrets: []string{plain},
			header: header("X-Hub-Signature-256", "SHA256="+strings.TrimPrefix(good, "sha256="))},
		{name: "github truncated hex", provider: GitHub, header: header("X-Hub-Signature-256", good[:len(good)-2]), body: body,
			secrets: []string{plain}},
		{name: "github bare hex", provider: GitHub, header: header("X-Hub-Signature-256", strings.TrimPrefix(good, "sha256=")),
			body: body, secrets: []string{plain}},
		{name: "github missing header", provider: GitHub, header: header(), body: body, secrets: []string{plain}},
		{name: "github header twice", provider: GitHub, header: header("X-Hub-Signature-256", good, "X-Hub-Signature-256", good),
			body: body, secrets: []string{plain}},
		{name: "github no secrets", provider: GitHub, header: header("X-Hub-Signature-256", good), body: body},
		{name: "github standard secret is not an hmac key", provider: GitHub, body: body, secrets: []string{standardText},
			header: header("X-Hub-Signature-256", SignGitHub(standardKey, body))},
		{name: "bitbucket", provider: Bitbucket, header: header("X-Hub-Signature", SignHMAC(plainSecret, body)), body: body,
			secrets: []string{plain}, ok: true},
		{name: "bitbucket sha1", provider: Bitbucket, header: header("X-Hub-Signature", sha1Sig), body: body, secrets: []string{plain}},
		{name: "bitbucket wrong header", provider: Bitbucket, header: header("X-Hub-Signature-256", good), body: body, secrets: []string{plain}},
		{name: "generic", provider: GenericHMAC, header: header("X-Signature", SignHMAC(plainSecret, body)), body: body,
			secrets: []string{plain}, ok: true},
		{name: "generic wrong secret", provider: GenericHMAC, header: header("X-Signature", SignHMAC(otherSecret, body)), body: body,
			secrets: []string{plain}},
		{name: "unknown provider", provider: "svn", header: header("X-Signature", SignHMAC(plainSecret, body)), body: body,
			secrets: []string{plain}},
	})
}

func TestVerifyStandard(t *testing.T) {
	body := fixture(t, "generic_push.json")
	const id = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
	signed := func(key []byte, ts time.Time) http.Header { return standardHeaders(header(), key, id, ts, body) }
	multi := signed(otherKey, now)
	multi.Set("webhook-signature", "v2,abc v1,bm90LWEtc2lnbmF0dXJl "+multi.Get("webhook-signature")+" v1a,xyz")
	changedID := signed(standardKey, now)
	changedID.Set("webhook-id", "msg_other")
	runVerifyCases(t, []verifyCase{
		{name: "valid", provider: StandardWebhooks, header: signed(standardKey, now), body: body, secrets: []string{standardText}, ok: true},
		{name: "second rotation secret", provider: StandardWebhooks, header: signed(otherKey, now), body: body,
			secrets: []string{standardText, otherText}, ok: true},
		{name: "several signatures, one matching", provider: StandardWebhooks, header: multi, body: body,
			secrets: []string{otherText}, ok: true},
		{name: "wrong key", provider: StandardWebhooks, header: signed(otherKey, now), body: body, secrets: []string{standardText}},
		{name: "id changed", provider: StandardWebhooks, header: changedID, body: body, secrets: []string{standardText}},
		{name: "at the tolerance", provider: StandardWebhooks, header: signed(standardKey, now.Add(-5*time.Minute)), body: body,
			secrets: []string{standardText}, ok: true},
		{name: "expired", provider: StandardWebhooks, header: signed(standardKey, now.Add(-5*time.Minute-time.Second)), body: body,
			secrets: []string{standardText}},
		{name: "future", provider: StandardWebhooks, header: signed(standardKey, now.Add(6*time.Minute)), body: body,
			secrets: []string{standardText}},
		{name: "zero now", provider: StandardWebhooks, header: signed(standardKey, now), body: body, secrets: []string{standardText},
			now: time.Time{}.Add(time.Nanosecond)},
		{name: "plain secret does not count", provider: StandardWebhooks, header: signed(standardKey, now), body: body,
			secrets: []string{string(standardKey)}},
		{name: "missing headers", provider: StandardWebhooks, header: header(), body: body, secrets: []string{standardText}},
		{name: "non-numeric timestamp", provider: StandardWebhooks, body: body, secrets: []string{standardText},
			header: header("webhook-id", id, "webhook-timestamp", "+1795"+"000000", "webhook-signature", "v1,x")},
	})
}

func TestVerifyGitLab(t *testing.T) {
	body := fixture(t, "gitlab_push.json")
	token := "glpat-like-secret-token"
	signed := standardHeaders(header("X-Gitlab-Event", "Push Hook"), standardKey, "wh-1", now, body)
	signedAndToken := standardHeaders(header("X-Gitlab-Token", token), otherKey, "wh-1", now, body)
	runVerifyCases(t, []verifyCase{
		{name: "token", provider: GitLab, header: header("X-Gitlab-Token", token), body: body, secrets: []string{token}, ok: true},
		{name: "token second rotation secret", provider: GitLab, header: header("X-Gitlab-Token", token), body: body,
			secrets: []string{"old-token", token}, ok: true},
		{name: "wrong token", provider: GitLab, header: header("X-Gitlab-Token", "glpat-like-secret-tokem"), body: body,
			secrets: []string{token}},
		{name: "token of another length", provider: GitLab, header: header("X-Gitlab-Token", token+"x"), body: body, secrets: []string{token}},
		{name: "token prefix", provider: GitLab, header: header("X-Gitlab-Token", token[:5]), body: body, secrets: []string{token}},
		{name: "no token", provider: GitLab, header: header(), body: body, secrets: []string{token}},
		{name: "signing token", provider: GitLab, header: signed, body: body, secrets: []string{standardText}, ok: true},
		{name: "signing token beside a plain token", provider: GitLab, header: signed, body: body,
			secrets: []string{token, standardText}, ok: true},
		{name: "signature decides when a standard secret is configured", provider: GitLab, header: signedAndToken, body: body,
			secrets: []string{token, standardText}},
		{name: "token only with both configured", provider: GitLab, header: header("X-Gitlab-Token", token), body: body,
			secrets: []string{token, standardText}, ok: true},
		{name: "signature expired", provider: GitLab, header: signed, body: body, secrets: []string{standardText},
			now: now.Add(time.Hour)},
		{name: "standard secret is not a token", provider: GitLab, header: header("X-Gitlab-Token", standardText), body: body,
			secrets: []string{standardText}},
	})
}

func TestVerifyCloudEvents(t *testing.T) {
	const ceID = "b2f4c8e0-5d1a-4c3e-9f7b-2a6d8e0c1f34"
	data := fixture(t, "generic_push.json")
	binary := func(webhookID string) http.Header {
		h := header("Content-Type", "application/json", "ce-specversion", "1.0", "ce-id", ceID,
			"ce-type", "dev.sealane.git.push.v1", "ce-source", "/ci")
		return standardHeaders(h, standardKey, webhookID, now, data)
	}
	structuredBody := fixture(t, "cloudevent_structured.json")
	structured := func(webhookID string) http.Header {
		h := header("Content-Type", "application/cloudevents+json")
		return standardHeaders(h, standardKey, webhookID, now, structuredBody)
	}
	runVerifyCases(t, []verifyCase{
		{name: "binary", provider: CloudEvents, header: binary(ceID), body: data, secrets: []string{standardText}, ok: true},
		{name: "binary webhook-id is not ce-id", provider: CloudEvents, header: binary("msg_replayed"), body: data,
			secrets: []string{standardText}},
		{name: "structured", provider: CloudEvents, header: structured(ceID), body: structuredBody, secrets: []string{standardText}, ok: true},
		{name: "structured webhook-id is not the event id", provider: CloudEvents, header: structured("msg_replayed"),
			body: structuredBody, secrets: []string{standardText}},
		{name: "structured not json", provider: CloudEvents, header: standardHeaders(header("Content-Type", "application/cloudevents+json"),
			standardKey, ceID, now, []byte("nope")), body: []byte("nope"), secrets: []string{standardText}},
		{name: "expired", provider: CloudEvents, header: binary(ceID), body: data, secrets: []string{standardText},
			now: now.Add(10 * time.Minute)},
		{name: "unsigned", provider: CloudEvents, header: header("ce-id", ceID), body: data, secrets: []string{standardText}},
	})
}

func TestVerifyErrorSaysNothing(t *testing.T) {
	body := []byte(`{"secret":"body-bytes"}`)
	err := Verify(GitHub, Request{Header: header("X-Hub-Signature-256", "sha256=00"), Body: body, Now: now},
		secrets(t, string(plainSecret)))
	if err == nil {
		t.Fatal("Verify() = nil")
	}
	for _, leak := range []string{string(plainSecret), "body-bytes", "sha256=00", "X-Hub"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("Verify() error %q contains %q", err, leak)
		}
	}
}

func TestAcceptsContentType(t *testing.T) {
	for _, tc := range []struct {
		provider, contentType string
		want                  bool
	}{
		{GitHub, "application/json", true},
		{GitHub, "application/json; charset=utf-8", true},
		{GitLab, "Application/JSON", true},
		{GitHub, "application/x-www-form-urlencoded", false},
		{GitHub, "application/cloudevents+json", false},
		{Bitbucket, "", false},
		{GenericHMAC, "text/plain", false},
		{StandardWebhooks, "application/json", true},
		{CloudEvents, "application/json", true},
		{CloudEvents, "application/cloudevents+json; charset=UTF-8", true},
		{CloudEvents, "application/cloudevents-batch+json", false},
		{"svn", "application/json", false},
	} {
		if got := AcceptsContentType(tc.provider, tc.contentType); got != tc.want {
			t.Errorf("AcceptsContentType(%q, %q) = %v, want %v", tc.provider, tc.contentType, got, tc.want)
		}
	}
}
