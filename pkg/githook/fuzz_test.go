package githook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// checkParse asserts what Parse promises for any input: a malformed error, or a delivery whose
// pushes are consistent.
func checkParse(t *testing.T, provider string, h http.Header, body []byte) {
	d, err := Parse(provider, Request{Header: h, Body: body, Now: now})
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("Parse() error %v does not wrap ErrMalformed", err)
		}
		return
	}
	switch d.Kind {
	case KindPush, KindTagPush, KindPing, KindOther:
	default:
		t.Fatalf("delivery kind %q", d.Kind)
	}
	if (d.Kind == KindPing) && len(d.Pushes) > 0 {
		t.Fatalf("ping with %d pushes", len(d.Pushes))
	}
	for _, p := range d.Pushes {
		checkPush(t, p)
	}
}

func checkPush(t *testing.T, p Push) {
	switch {
	case p.Kind == KindPush && (p.Branch == "" || p.Tag != "" || p.Ref != branchPrefix+p.Branch):
		t.Fatalf("branch push %+v", p)
	case p.Kind == KindTagPush && (p.Tag == "" || p.Branch != "" || p.Ref != tagPrefix+p.Tag):
		t.Fatalf("tag push %+v", p)
	case p.Kind == KindOther && (p.Branch != "" || p.Tag != "" || !strings.HasPrefix(p.Ref, "refs/")):
		t.Fatalf("other push %+v", p)
	case p.Kind != KindPush && p.Kind != KindTagPush && p.Kind != KindOther:
		t.Fatalf("push kind %q", p.Kind)
	case p.Deleted != isZeroSHA(p.Commit), !isSHA(p.Commit), p.Repository == "":
		t.Fatalf("push %+v", p)
	}
}

func FuzzParseGitHub(f *testing.F) {
	for _, name := range []string{"github_push.json", "github_tag.json", "github_delete.json", "gitea_push.json"} {
		f.Add("push", fixture(f, name))
	}
	f.Add("ping", fixture(f, "github_ping.json"))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		checkParse(t, GitHub, header("X-GitHub-Event", event, "X-GitHub-Delivery", "d"), body)
	})
}

func FuzzParseGitLab(f *testing.F) {
	f.Add("Push Hook", fixture(f, "gitlab_push.json"))
	f.Add("Push Hook", fixture(f, "gitlab_delete.json"))
	f.Add("Tag Push Hook", fixture(f, "gitlab_tag_push.json"))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		checkParse(t, GitLab, header("X-Gitlab-Event", event), body)
	})
}

func FuzzParseBitbucket(f *testing.F) {
	f.Add("repo:push", fixture(f, "bitbucket_cloud_push.json"))
	f.Add("repo:refs_changed", fixture(f, "bitbucket_dc_refs_changed.json"))
	f.Add("diagnostics:ping", fixture(f, "bitbucket_dc_ping.json"))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		checkParse(t, Bitbucket, header("X-Event-Key", event), body)
	})
}

func FuzzParseGenericHMAC(f *testing.F) {
	for _, name := range []string{"generic_push.json", "generic_tag.json", "generic_ping.json"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkParse(t, GenericHMAC, header("X-Delivery-Id", "d"), body)
	})
}

func FuzzParseStandardWebhooks(f *testing.F) {
	for _, name := range []string{"generic_push.json", "generic_tag.json", "generic_ping.json"} {
		f.Add(fixture(f, name))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkParse(t, StandardWebhooks, header("webhook-id", "msg_1"), body)
	})
}

func FuzzParseCloudEvents(f *testing.F) {
	f.Add("application/json", "1.0", "id-1", "dev.sealane.git.push.v1", fixture(f, "generic_push.json"))
	f.Add("application/json", "1.0", "id-2", "dev.sealane.git.ping.v1", []byte(nil))
	f.Add("application/cloudevents+json", "", "", "", fixture(f, "cloudevent_structured.json"))
	f.Fuzz(func(t *testing.T, contentType, specVersion, id, ceType string, body []byte) {
		h := header("Content-Type", contentType, "ce-specversion", specVersion, "ce-id", id,
			"ce-type", ceType, "ce-source", "/ci")
		checkParse(t, CloudEvents, h, body)
	})
}

// checkVerify runs Verify and reports whether it accepted; any error must wrap ErrUnauthorized.
func checkVerify(t *testing.T, provider string, h http.Header, body []byte, raws ...string) bool {
	err := Verify(provider, Request{Header: h, Body: body, Now: now}, secrets(t, raws...))
	if err != nil && !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Verify() error %v does not wrap ErrUnauthorized", err)
	}
	return err == nil
}

// fuzzHexHMAC fuzzes a provider signing body in a "sha256=<hex>" header: whatever it accepts
// must be the body's own signature.
func fuzzHexHMAC(f *testing.F, provider, name, fixtureName string) {
	body := fixture(f, fixtureName)
	f.Add(SignHMAC(plainSecret, body), body)
	f.Add(SignHMAC(otherSecret, body), body)
	f.Add("sha1=0123", body)
	f.Fuzz(func(t *testing.T, sig string, body []byte) {
		accepted := checkVerify(t, provider, header(name, sig), body, string(plainSecret))
		if accepted && (!strings.HasPrefix(sig, "sha256=") || !strings.EqualFold(sig, SignHMAC(plainSecret, body))) {
			t.Fatalf("accepted signature %q", sig)
		}
	})
}

func FuzzVerifyGitHub(f *testing.F) {
	fuzzHexHMAC(f, GitHub, "X-Hub-Signature-256", "github_push.json")
}

func FuzzVerifyBitbucket(f *testing.F) {
	fuzzHexHMAC(f, Bitbucket, "X-Hub-Signature", "bitbucket_cloud_push.json")
}

func FuzzVerifyGenericHMAC(f *testing.F) {
	fuzzHexHMAC(f, GenericHMAC, "X-Signature", "generic_push.json")
}

// fuzzStandard fuzzes a provider signed the Standard Webhooks way: whatever it accepts must
// carry the v1 signature of its id, timestamp and body.
func fuzzStandard(f *testing.F, provider string, h func(id string) http.Header, body []byte) {
	ts := strconv.FormatInt(now.Unix(), 10)
	f.Add("b2f4c8e0-5d1a-4c3e-9f7b-2a6d8e0c1f34", ts, SignStandard(standardKey, "b2f4c8e0-5d1a-4c3e-9f7b-2a6d8e0c1f34", now, body), body)
	f.Add("msg_1", ts, "v2,x v1,"+strings.Repeat("A", 44), body)
	f.Fuzz(func(t *testing.T, id, timestamp, sig string, body []byte) {
		hdr := h(id)
		hdr.Set("webhook-id", id)
		hdr.Set("webhook-timestamp", timestamp)
		hdr.Set("webhook-signature", sig)
		if !checkVerify(t, provider, hdr, body, standardText) {
			return
		}
		if !slices.Contains(strings.Fields(sig), standardSignature(id, timestamp, body)) {
			t.Fatalf("accepted signature %q", sig)
		}
	})
}

// standardSignature is the v1 signature of a message under standardKey, computed here
// independently of the package.
func standardSignature(id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, standardKey)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func FuzzVerifyStandardWebhooks(f *testing.F) {
	fuzzStandard(f, StandardWebhooks, func(string) http.Header { return header() }, fixture(f, "generic_push.json"))
}

func FuzzVerifyCloudEvents(f *testing.F) {
	binary := func(id string) http.Header {
		return header("Content-Type", "application/json", "ce-id", id)
	}
	fuzzStandard(f, CloudEvents, binary, fixture(f, "generic_push.json"))
}

func FuzzVerifyGitLab(f *testing.F) {
	body := fixture(f, "gitlab_push.json")
	f.Add("glpat-token", "", body)
	f.Add("", SignStandard(standardKey, "wh-1", now, body), body)
	f.Fuzz(func(t *testing.T, token, sig string, body []byte) {
		h := header("X-Gitlab-Token", token, "webhook-id", "wh-1",
			"webhook-timestamp", strconv.FormatInt(now.Unix(), 10), "webhook-signature", sig)
		if !checkVerify(t, GitLab, h, body, "glpat-token", standardText) {
			return
		}
		if sig != "" {
			if !slices.Contains(strings.Fields(sig), standardSignature("wh-1", strconv.FormatInt(now.Unix(), 10), body)) {
				t.Fatalf("accepted signature %q", sig)
			}
		} else if token != "glpat-token" {
			t.Fatalf("accepted token %q", token)
		}
	})
}
