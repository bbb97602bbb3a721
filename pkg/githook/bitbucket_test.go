package githook

import "testing"

func TestParseBitbucket(t *testing.T) {
	const uuid = "0d62ac5c-3d4e-4b4c-a1b4-4e3f4b2c1d0e"
	cloudMain := Push{
		Kind: KindPush, Repository: "acme/app", RepositoryURL: "https://bitbucket.org/acme/app.git",
		Ref: "refs/heads/main", Branch: "main", Before: "1f2e3d4c5b6a79880716253443526170f9e8d7c6",
		Commit: "a8c5ef5d1f8e3b4a0b6e1c7f2d9a3b5c6e7f8a9b", Sender: "alice",
	}
	cloudTagDeleted := Push{
		Kind: KindTagPush, Repository: "acme/app", RepositoryURL: "https://bitbucket.org/acme/app.git",
		Ref: "refs/tags/v0.9.0", Tag: "v0.9.0", Before: "0123456789abcdef0123456789abcdef01234567",
		Commit: zero40, Deleted: true, Sender: "alice",
	}
	dc := Push{
		Repository: "PROJ/app", RepositoryURL: "https://bitbucket.example/scm/proj/app.git",
		SSHURL: "ssh://git@bitbucket.example:7999/proj/app.git", Sender: "admin",
	}
	dcMain, dcTag, dcOld := dc, dc, dc
	dcMain.Kind, dcMain.Ref, dcMain.Branch = KindPush, "refs/heads/main", "main"
	dcMain.Before, dcMain.Commit = "ecddabb624f6f5ba43816f5926e580a5f680a932", "178864a7d521b6f5e720b386b2c2b0ef8563e0dc"
	dcTag.Kind, dcTag.Ref, dcTag.Tag = KindTagPush, "refs/tags/v2.0.0", "v2.0.0"
	dcTag.Before, dcTag.Commit = zero40, "178864a7d521b6f5e720b386b2c2b0ef8563e0dc"
	dcOld.Kind, dcOld.Ref, dcOld.Branch, dcOld.Deleted = KindPush, "refs/heads/old", "old", true
	dcOld.Before, dcOld.Commit = "ecddabb624f6f5ba43816f5926e580a5f680a932", zero40

	runParseCases(t, []parseCase{
		{name: "cloud push with a tag deletion", provider: Bitbucket,
			header: header("X-Event-Key", "repo:push", "X-Request-UUID", uuid, "X-Hook-UUID", "hook"),
			body:   fixture(t, "bitbucket_cloud_push.json"),
			want: Delivery{ID: uuid, Event: "repo:push", Kind: KindPush,
				Pushes: []Push{cloudMain, cloudTagDeleted}}},
		{name: "cloud new branch", provider: Bitbucket,
			header: header("X-Event-Key", "repo:push", "X-Hook-UUID", "hook"),
			body: []byte(`{"push":{"changes":[{"new":{"type":"branch","name":"f","target":{"hash":"` + sha1Main +
				`"}},"old":null}]},"repository":{"full_name":"acme/app"},"actor":{"username":"bob","nickname":"b"}}`),
			want: Delivery{ID: "hook", Event: "repo:push", Kind: KindPush, Pushes: []Push{{Kind: KindPush,
				Repository: "acme/app", Ref: "refs/heads/f", Branch: "f", Before: zero40, Commit: sha1Main, Sender: "bob"}}}},
		{name: "data center refs changed", provider: Bitbucket,
			header: header("X-Event-Key", "repo:refs_changed", "X-Request-Id", "dc-1"),
			body:   fixture(t, "bitbucket_dc_refs_changed.json"),
			want: Delivery{ID: "dc-1", Event: "repo:refs_changed", Kind: KindPush,
				Pushes: []Push{dcMain, dcTag, dcOld}}},
		{name: "data center ping", provider: Bitbucket,
			header: header("X-Event-Key", "diagnostics:ping", "X-Request-Id", "dc-2"),
			body:   fixture(t, "bitbucket_dc_ping.json"),
			want:   Delivery{ID: "dc-2", Event: "diagnostics:ping", Kind: KindPing}},
		{name: "pull request is other", provider: Bitbucket, header: header("X-Event-Key", "pullrequest:created"),
			body: []byte(`{}`), want: Delivery{Event: "pullrequest:created", Kind: KindOther}},
		{name: "cloud change with neither side", provider: Bitbucket, header: header("X-Event-Key", "repo:push"),
			body: []byte(`{"push":{"changes":[{"new":null,"old":null}]},"repository":{"full_name":"a/b"}}`), wantErr: true},
		{name: "cloud unknown ref type", provider: Bitbucket, header: header("X-Event-Key", "repo:push"),
			body: []byte(`{"push":{"changes":[{"new":{"type":"bookmark","name":"x","target":{"hash":"` + sha1Main +
				`"}}}]},"repository":{"full_name":"a/b"}}`), wantErr: true},
		{name: "data center without project", provider: Bitbucket, header: header("X-Event-Key", "repo:refs_changed"),
			body:    []byte(`{"repository":{"slug":"app"},"changes":[{"ref":{"id":"refs/heads/main"},"toHash":"` + sha1Main + `"}]}`),
			wantErr: true},
		{name: "changes not an array", provider: Bitbucket, header: header("X-Event-Key", "repo:refs_changed"),
			body: []byte(`{"changes":{}}`), wantErr: true},
		{name: "no event header", provider: Bitbucket, header: header(), body: []byte(`{}`), wantErr: true},
	})
}
