package githook

import (
	"net/http"
	"testing"
)

func TestParseGitHub(t *testing.T) {
	githubPush := Push{
		Kind:          KindPush,
		Repository:    "acme/app",
		RepositoryURL: "https://github.com/acme/app.git",
		SSHURL:        "git@github.com:acme/app.git",
		Sender:        "octocat",
	}
	push := githubPush
	push.Ref, push.Branch, push.Before, push.Commit = "refs/heads/main", "main", sha1Prev, sha1Main
	tag := githubPush
	tag.Kind, tag.Ref, tag.Tag, tag.Before, tag.Commit = KindTagPush, "refs/tags/v1.2.0", "v1.2.0", zero40, sha1Main
	del := githubPush
	del.Ref, del.Branch, del.Before, del.Commit, del.Deleted = "refs/heads/feature/login", "feature/login", sha1Prev, zero40, true
	gitea := Push{
		Kind:          KindPush,
		Repository:    "acme/app",
		RepositoryURL: "https://gitea.example/acme/app.git",
		SSHURL:        "ssh://git@gitea.example:2222/acme/app.git",
		Ref:           "refs/heads/develop",
		Branch:        "develop",
		Before:        "28e1879d029cb852e4844d9c718537df08844e03",
		Commit:        "bffeb74224043ba2feb48d137756c8a9331c449a",
		Sender:        "gitea",
	}
	hdr := func(event string) http.Header {
		return header("X-GitHub-Event", event, "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	}
	const id = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	runParseCases(t, []parseCase{
		{name: "push", provider: GitHub, header: hdr("push"), body: fixture(t, "github_push.json"),
			want: Delivery{ID: id, Event: "push", Kind: KindPush, Pushes: []Push{push}}},
		{name: "tag push", provider: GitHub, header: hdr("push"), body: fixture(t, "github_tag.json"),
			want: Delivery{ID: id, Event: "push", Kind: KindTagPush, Pushes: []Push{tag}}},
		{name: "branch deleted", provider: GitHub, header: hdr("push"), body: fixture(t, "github_delete.json"),
			want: Delivery{ID: id, Event: "push", Kind: KindPush, Pushes: []Push{del}}},
		{name: "ping", provider: GitHub, header: hdr("ping"), body: fixture(t, "github_ping.json"),
			want: Delivery{ID: id, Event: "ping", Kind: KindPing}},
		{name: "other event", provider: GitHub, header: hdr("pull_request"), body: []byte(`{}`),
			want: Delivery{ID: id, Event: "pull_request", Kind: KindOther}},
		{name: "gitea push", provider: GitHub,
			header: header("X-Gitea-Event", "push", "X-Gitea-Delivery", "f6266f16-1bf3-46a5-9ea4-602e06ead473"),
			body:   fixture(t, "gitea_push.json"),
			want: Delivery{ID: "f6266f16-1bf3-46a5-9ea4-602e06ead473", Event: "push", Kind: KindPush,
				Pushes: []Push{gitea}}},
		{name: "forgejo headers", provider: GitHub,
			header: header("X-Forgejo-Event", "push", "X-Forgejo-Delivery", "d1"),
			body:   fixture(t, "gitea_push.json"),
			want:   Delivery{ID: "d1", Event: "push", Kind: KindPush, Pushes: []Push{gitea}}},
		{name: "push to a note ref is other", provider: GitHub, header: hdr("push"),
			body: []byte(`{"ref":"refs/notes/commits","before":"` + sha1Prev + `","after":"` + sha1Main +
				`","repository":{"full_name":"acme/app"},"sender":{"login":"bob"}}`),
			want: Delivery{ID: id, Event: "push", Kind: KindOther, Pushes: []Push{{Kind: KindOther,
				Repository: "acme/app", Ref: "refs/notes/commits", Before: sha1Prev, Commit: sha1Main, Sender: "bob"}}}},
		{name: "no event header", provider: GitHub, header: header(), body: fixture(t, "github_push.json"), wantErr: true},
		{name: "not json", provider: GitHub, header: hdr("push"), body: []byte(`ref=refs/heads/main`), wantErr: true},
		{name: "wrong type", provider: GitHub, header: hdr("push"), body: []byte(`{"ref":1}`), wantErr: true},
		{name: "deleted not a bool", provider: GitHub, header: hdr("push"), body: []byte(`{"deleted":"yes"}`), wantErr: true},
		{name: "short ref", provider: GitHub, header: hdr("push"),
			body: []byte(`{"ref":"main","after":"` + sha1Main + `","repository":{"full_name":"acme/app"}}`), wantErr: true},
		{name: "bad sha", provider: GitHub, header: hdr("push"),
			body: []byte(`{"ref":"refs/heads/main","after":"abc123","repository":{"full_name":"acme/app"}}`), wantErr: true},
		{name: "no repository", provider: GitHub, header: hdr("push"),
			body: []byte(`{"ref":"refs/heads/main","after":"` + sha1Main + `"}`), wantErr: true},
		{name: "empty body", provider: GitHub, header: hdr("push"), wantErr: true},
	})
}
