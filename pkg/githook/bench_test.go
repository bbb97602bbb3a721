package githook

import (
	"testing"
)

func BenchmarkVerifyGitHub(b *testing.B) {
	body := fixture(b, "github_push.json")
	req := Request{Header: header("X-Hub-Signature-256", SignGitHub(plainSecret, body)), Body: body, Now: now}
	keys := secrets(b, string(otherSecret), string(plainSecret))
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(GitHub, req, keys); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyStandardWebhooks(b *testing.B) {
	body := fixture(b, "generic_push.json")
	req := Request{Header: standardHeaders(header(), standardKey, "msg_1", now, body), Body: body, Now: now}
	keys := secrets(b, standardText)
	b.ReportAllocs()
	for b.Loop() {
		if err := Verify(StandardWebhooks, req, keys); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseGitHub(b *testing.B) {
	req := Request{Header: header("X-GitHub-Event", "push"), Body: fixture(b, "github_push.json"), Now: now}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(GitHub, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseBitbucketCloud(b *testing.B) {
	req := Request{Header: header("X-Event-Key", "repo:push"), Body: fixture(b, "bitbucket_cloud_push.json"), Now: now}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(Bitbucket, req); err != nil {
			b.Fatal(err)
		}
	}
}
