package githook

import (
	"net/http"
	"testing"
)

func TestParseGitLab(t *testing.T) {
	base := Push{
		Kind:          KindPush,
		Repository:    "acme/platform/app",
		RepositoryURL: "https://gitlab.example.com/acme/platform/app.git",
		SSHURL:        "git@gitlab.example.com:acme/platform/app.git",
		Sender:        "jsmith",
	}
	push := base
	push.Ref, push.Branch = "refs/heads/main", "main"
	push.Before, push.Commit = "95790bf891e76fee5e1747ab589903a6a1f80f22", "da1560886d4f094c3e6c9ef40349f7d38b5d27d7"
	tag := base
	tag.Kind, tag.Ref, tag.Tag = KindTagPush, "refs/tags/v1.0.0", "v1.0.0"
	tag.Before, tag.Commit = zero40, "82b3d5ae55f7080f1e6022629cdb57bfae7cccc7"
	del := base
	del.Ref, del.Branch, del.Deleted = "refs/heads/feature/old", "feature/old", true
	del.Before, del.Commit = "95790bf891e76fee5e1747ab589903a6a1f80f22", zero40

	const uuid = "5a1b7c2e-6f3d-4c8a-9e1b-0d2f4a6c8e10"
	hdr := func(event string) http.Header {
		return header("X-Gitlab-Event", event, "X-Gitlab-Event-UUID", uuid, "X-Gitlab-Token", "t")
	}
	runParseCases(t, []parseCase{
		{name: "push hook", provider: GitLab, header: hdr("Push Hook"), body: fixture(t, "gitlab_push.json"),
			want: Delivery{ID: uuid, Event: "Push Hook", Kind: KindPush, Pushes: []Push{push}}},
		{name: "tag push hook", provider: GitLab, header: hdr("Tag Push Hook"), body: fixture(t, "gitlab_tag_push.json"),
			want: Delivery{ID: uuid, Event: "Tag Push Hook", Kind: KindTagPush, Pushes: []Push{tag}}},
		{name: "branch deleted", provider: GitLab, header: hdr("Push Hook"), body: fixture(t, "gitlab_delete.json"),
			want: Delivery{ID: uuid, Event: "Push Hook", Kind: KindPush, Pushes: []Push{del}}},
		{name: "idempotency key first", provider: GitLab,
			header: header("X-Gitlab-Event", "Push Hook", "X-Gitlab-Event-UUID", uuid, "Idempotency-Key", "ik-1", "webhook-id", "wh-1"),
			body:   fixture(t, "gitlab_push.json"),
			want:   Delivery{ID: "ik-1", Event: "Push Hook", Kind: KindPush, Pushes: []Push{push}}},
		{name: "signed: the signed webhook-id, not the idempotency key", provider: GitLab,
			header: header("X-Gitlab-Event", "Push Hook", "Idempotency-Key", "ik-1", "webhook-id", "wh-1", "webhook-signature", "v1,x"),
			body:   fixture(t, "gitlab_push.json"),
			want:   Delivery{ID: "wh-1", Event: "Push Hook", Kind: KindPush, Pushes: []Push{push}}},
		{name: "webhook-id before event uuid", provider: GitLab,
			header: header("X-Gitlab-Event", "Push Hook", "X-Gitlab-Event-UUID", uuid, "webhook-id", "wh-1"),
			body:   fixture(t, "gitlab_push.json"),
			want:   Delivery{ID: "wh-1", Event: "Push Hook", Kind: KindPush, Pushes: []Push{push}}},
		{name: "merge request is other", provider: GitLab, header: hdr("Merge Request Hook"), body: []byte(`{"object_kind":"merge_request"}`),
			want: Delivery{ID: uuid, Event: "Merge Request Hook", Kind: KindOther}},
		{name: "object kind mismatch", provider: GitLab, header: hdr("Push Hook"), body: fixture(t, "gitlab_tag_push.json"), wantErr: true},
		{name: "no event header", provider: GitLab, header: header(), body: fixture(t, "gitlab_push.json"), wantErr: true},
		{name: "project not an object", provider: GitLab, header: hdr("Push Hook"), body: []byte(`{"project":"x"}`), wantErr: true},
	})
}
