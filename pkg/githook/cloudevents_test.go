package githook

import (
	"net/http"
	"testing"
)

func TestParseCloudEvents(t *testing.T) {
	const ceID = "b2f4c8e0-5d1a-4c3e-9f7b-2a6d8e0c1f34"
	push := Push{
		Kind: KindPush, Repository: "acme/app", RepositoryURL: "https://git.example/acme/app.git",
		Ref: "refs/heads/main", Branch: "main", Before: sha1Prev, Commit: sha1Main, Sender: "alice",
	}
	tag := Push{
		Kind: KindTagPush, Repository: "acme/app", RepositoryURL: "https://git.example/acme/app.git",
		Ref: "refs/tags/v1.2.0", Tag: "v1.2.0", Before: zero40, Commit: sha1Main, Sender: "ci-bot",
	}
	binary := func(pairs ...string) http.Header {
		h := header("Content-Type", "application/json", "ce-specversion", "1.0", "ce-id", ceID,
			"ce-type", "dev.sealane.git.push.v1", "ce-source", "https://ci.example/pipelines/42")
		for i := 0; i+1 < len(pairs); i += 2 {
			h.Set(pairs[i], pairs[i+1])
		}
		return h
	}
	structured := header("Content-Type", "application/cloudevents+json; charset=utf-8")
	runParseCases(t, []parseCase{
		{name: "binary", provider: CloudEvents, header: binary(), body: fixture(t, "generic_push.json"),
			want: Delivery{ID: ceID, Event: "dev.sealane.git.push.v1", Kind: KindPush, Pushes: []Push{push}}},
		{name: "structured", provider: CloudEvents, header: structured, body: fixture(t, "cloudevent_structured.json"),
			want: Delivery{ID: ceID, Event: "dev.sealane.git.push.v1", Kind: KindTagPush, Pushes: []Push{tag}}},
		{name: "binary ping", provider: CloudEvents, header: binary("ce-type", "dev.sealane.git.ping.v1"),
			want: Delivery{ID: ceID, Event: "dev.sealane.git.ping.v1", Kind: KindPing}},
		{name: "structured ping without data", provider: CloudEvents, header: structured,
			body: []byte(`{"specversion":"1.0","id":"p1","type":"com.example.ping","source":"/x"}`),
			want: Delivery{ID: "p1", Event: "com.example.ping", Kind: KindPing}},
		{name: "binary missing source", provider: CloudEvents, header: binary("ce-source", ""),
			body: fixture(t, "generic_push.json"), wantErr: true},
		{name: "binary wrong specversion", provider: CloudEvents, header: binary("ce-specversion", "0.3"),
			body: fixture(t, "generic_push.json"), wantErr: true},
		{name: "structured missing id", provider: CloudEvents, header: structured,
			body: []byte(`{"specversion":"1.0","type":"t","source":"/x","data":{}}`), wantErr: true},
		{name: "structured no data", provider: CloudEvents, header: structured,
			body: []byte(`{"specversion":"1.0","id":"1","type":"t","source":"/x","data":null}`), wantErr: true},
		{name: "structured data string", provider: CloudEvents, header: structured,
			body: []byte(`{"specversion":"1.0","id":"1","type":"t","source":"/x","data":"{}"}`), wantErr: true},
		{name: "structured id not a string", provider: CloudEvents, header: structured,
			body: []byte(`{"specversion":"1.0","id":7,"type":"t","source":"/x","data":{}}`), wantErr: true},
	})
}
