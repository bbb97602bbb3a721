package githook

import (
	"errors"
	"fmt"
)

// The GitLab push events and the object_kind of their payloads.
const (
	gitlabPushEvent    = "Push Hook"
	gitlabTagPushEvent = "Tag Push Hook"
)

// gitlabPayload is the part of a GitLab push or tag push payload read.
type gitlabPayload struct {
	ObjectKind   string `json:"object_kind"`
	Ref          string `json:"ref"`
	Before       string `json:"before"`
	After        string `json:"after"`
	UserUsername string `json:"user_username"`
	UserName     string `json:"user_name"`
	Project      struct {
		PathWithNamespace string `json:"path_with_namespace"`
		GitHTTPURL        string `json:"git_http_url"`
		GitSSHURL         string `json:"git_ssh_url"`
		WebURL            string `json:"web_url"`
	} `json:"project"`
	Repository struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		Homepage   string `json:"homepage"`
	} `json:"repository"`
}

// parseGitLab reads a GitLab delivery; only Push Hook and Tag Push Hook are pushes. A delivery
// signed the Standard Webhooks way is identified by its signed webhook-id, any other by its
// Idempotency-Key (the same for GitLab's retries), webhook-id or X-Gitlab-Event-UUID.
func parseGitLab(req Request) (Delivery, error) {
	d := Delivery{
		ID:    firstHeader(req.Header, "Idempotency-Key", standardIDHeader, "X-Gitlab-Event-UUID"),
		Event: req.Header.Get("X-Gitlab-Event"),
	}
	if req.Header.Get(standardSignatureHeader) != "" && singleHeader(req.Header, standardIDHeader) != "" {
		d.ID = singleHeader(req.Header, standardIDHeader) // signed: never the unsigned Idempotency-Key
	}
	var objectKind string
	switch d.Event {
	case "":
		return Delivery{}, errors.New("no event header")
	case gitlabPushEvent:
		objectKind = "push"
	case gitlabTagPushEvent:
		objectKind = "tag_push"
	default:
		d.Kind = KindOther
		return d, nil
	}
	var p gitlabPayload
	if err := decodeJSON(req.Body, &p); err != nil {
		return Delivery{}, err
	}
	if p.ObjectKind != "" && p.ObjectKind != objectKind {
		return Delivery{}, fmt.Errorf("object_kind does not match event %q", d.Event)
	}
	push, err := finishPush(Push{
		Repository:    p.Project.PathWithNamespace,
		RepositoryURL: orElse(p.Project.GitHTTPURL, p.Repository.GitHTTPURL, p.Project.WebURL, p.Repository.Homepage),
		SSHURL:        orElse(p.Project.GitSSHURL, p.Repository.GitSSHURL),
		Ref:           p.Ref,
		Before:        p.Before,
		Commit:        p.After,
		Sender:        orElse(p.UserUsername, p.UserName),
	})
	if err != nil {
		return Delivery{}, err
	}
	return withPushes(d, []Push{push}), nil
}
