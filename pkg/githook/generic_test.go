package githook

import (
	"strings"
	"testing"
)

func TestParseGeneric(t *testing.T) {
	push := Push{
		Kind: KindPush, Repository: "acme/app", RepositoryURL: "https://git.example/acme/app.git",
		Ref: "refs/heads/main", Branch: "main", Before: sha1Prev, Commit: sha1Main, Sender: "alice",
	}
	tag := Push{
		Kind: KindTagPush, Repository: "acme/app", RepositoryURL: "https://git.example/acme/app.git",
		Ref: "refs/tags/v1.2.0", Tag: "v1.2.0", Commit: sha1Main + "0d1a26e67d8f5eaf1f6ba5c5", Sender: "ci-bot",
	}
	deleted := `{"repository":"acme/app","ref":"refs/heads/x","before":"` + sha1Prev + `","deleted":true}`
	runParseCases(t, []parseCase{
		{name: "hmac push", provider: GenericHMAC, header: header("X-Delivery-Id", "d-1"),
			body: fixture(t, "generic_push.json"),
			want: Delivery{ID: "d-1", Event: "push", Kind: KindPush, Pushes: []Push{push}}},
		{name: "hmac sha256 tag without event", provider: GenericHMAC, header: header(),
			body: fixture(t, "generic_tag.json"),
			want: Delivery{Event: "push", Kind: KindTagPush, Pushes: []Push{tag}}},
		{name: "hmac ping", provider: GenericHMAC, header: header(), body: fixture(t, "generic_ping.json"),
			want: Delivery{Event: "ping", Kind: KindPing}},
		{name: "hmac other event", provider: GenericHMAC, header: header(), body: []byte(`{"event":"release"}`),
			want: Delivery{Event: "release", Kind: KindOther}},
		{name: "deleted without commit", provider: GenericHMAC, header: header(), body: []byte(deleted),
			want: Delivery{Event: "push", Kind: KindPush, Pushes: []Push{{Kind: KindPush, Repository: "acme/app",
				Ref: "refs/heads/x", Branch: "x", Before: sha1Prev, Commit: zero40, Deleted: true}}}},
		{name: "standard webhooks push", provider: StandardWebhooks, header: header("webhook-id", "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"),
			body: fixture(t, "generic_push.json"),
			want: Delivery{ID: "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", Event: "push", Kind: KindPush, Pushes: []Push{push}}},
		{name: "missing commit", provider: GenericHMAC, header: header(),
			body: []byte(`{"repository":"acme/app","ref":"refs/heads/main"}`), wantErr: true},
		{name: "bare tags prefix", provider: GenericHMAC, header: header(),
			body: []byte(`{"repository":"acme/app","ref":"refs/tags/","commit":"` + sha1Main + `"}`), wantErr: true},
		{name: "array", provider: StandardWebhooks, header: header(), body: []byte(`[]`), wantErr: true},
		{name: "empty", provider: StandardWebhooks, header: header(), wantErr: true},
		{name: "trailing garbage", provider: GenericHMAC, header: header(), body: []byte(`{"event":"ping"} x`), wantErr: true},
		{name: "unknown provider", provider: "svn", header: header(), body: []byte(`{}`), wantErr: true},
	})
}

func TestParseErrorQuotesNoBody(t *testing.T) {
	for _, body := range []string{
		`{"repository":"acme/app","ref":"refs/heads/main","commit":"SECRETSECRET"}`,
		`{"repository":"acme/app","ref":"SECRETSECRET","commit":"` + sha1Main + `"}`,
		`{"repository":SECRETSECRET}`,
		`{"repository":987654321987}`,
		`{"deleted":"SECRETSECRET"}`,
	} {
		_, err := Parse(GenericHMAC, Request{Header: header(), Body: []byte(body), Now: now})
		if err == nil {
			t.Fatalf("Parse(%s) error = nil", body)
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "987654321987") {
			t.Errorf("Parse() error %q quotes the body", err)
		}
	}
}
