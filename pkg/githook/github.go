package githook

import "errors"

// githubPayload is the part of a GitHub, Gitea or Forgejo push payload read.
type githubPayload struct {
	Ref        string `json:"ref"`
	Before     string `json:"before"`
	After      string `json:"after"`
	Deleted    bool   `json:"deleted"`
	Repository struct {
		FullName string `json:"full_name"`
		CloneURL string `json:"clone_url"`
		HTMLURL  string `json:"html_url"`
		SSHURL   string `json:"ssh_url"`
	} `json:"repository"`
	Pusher struct {
		Name     string `json:"name"`
		Login    string `json:"login"`
		Username string `json:"username"`
	} `json:"pusher"`
	Sender struct {
		Login string `json:"login"`
	} `json:"sender"`
}

// parseGitHub reads a GitHub, Gitea or Forgejo delivery.
func parseGitHub(req Request) (Delivery, error) {
	d := Delivery{
		ID:    firstHeader(req.Header, "X-GitHub-Delivery", "X-Gitea-Delivery", "X-Forgejo-Delivery"),
		Event: firstHeader(req.Header, "X-GitHub-Event", "X-Gitea-Event", "X-Forgejo-Event"),
	}
	switch d.Event {
	case "":
		return Delivery{}, errors.New("no event header")
	case "ping":
		d.Kind = KindPing
		return d, nil
	case "push":
	default:
		d.Kind = KindOther
		return d, nil
	}
	var p githubPayload
	if err := decodeJSON(req.Body, &p); err != nil {
		return Delivery{}, err
	}
	push, err := finishPush(Push{
		Repository:    p.Repository.FullName,
		RepositoryURL: orElse(p.Repository.CloneURL, p.Repository.HTMLURL),
		SSHURL:        p.Repository.SSHURL,
		Ref:           p.Ref,
		Before:        p.Before,
		Commit:        p.After,
		Deleted:       p.Deleted,
		Sender:        orElse(p.Pusher.Name, p.Pusher.Login, p.Pusher.Username, p.Sender.Login),
	})
	if err != nil {
		return Delivery{}, err
	}
	return withPushes(d, []Push{push}), nil
}

// orElse is the first non-empty string.
func orElse(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
