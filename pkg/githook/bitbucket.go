package githook

import (
	"errors"
	"fmt"
	"strings"
)

// The Bitbucket events read: Cloud push, Data Center push and Data Center test delivery.
const (
	bitbucketCloudPush = "repo:push"
	bitbucketDCPush    = "repo:refs_changed"
	bitbucketDCPing    = "diagnostics:ping"
)

// bitbucketCloudRef is one side (new or old) of a Bitbucket Cloud change.
type bitbucketCloudRef struct {
	Type   string `json:"type"`
	Name   string `json:"name"`
	Target struct {
		Hash string `json:"hash"`
	} `json:"target"`
}

// bitbucketCloudPayload is the part of a Bitbucket Cloud repo:push payload read.
type bitbucketCloudPayload struct {
	Push struct {
		Changes []struct {
			New *bitbucketCloudRef `json:"new"`
			Old *bitbucketCloudRef `json:"old"`
		} `json:"changes"`
	} `json:"push"`
	Repository struct {
		FullName string `json:"full_name"`
		Links    struct {
			HTML struct {
				Href string `json:"href"`
			} `json:"html"`
		} `json:"links"`
	} `json:"repository"`
	Actor struct {
		Username    string `json:"username"`
		Nickname    string `json:"nickname"`
		DisplayName string `json:"display_name"`
	} `json:"actor"`
}

// bitbucketDCPayload is the part of a Bitbucket Data Center repo:refs_changed payload read.
type bitbucketDCPayload struct {
	Actor struct {
		Name string `json:"name"`
	} `json:"actor"`
	Repository struct {
		Slug    string `json:"slug"`
		Project struct {
			Key string `json:"key"`
		} `json:"project"`
		Links struct {
			Clone []struct {
				Href string `json:"href"`
				Name string `json:"name"`
			} `json:"clone"`
		} `json:"links"`
	} `json:"repository"`
	Changes []struct {
		Ref struct {
			ID        string `json:"id"`
			DisplayID string `json:"displayId"`
			Type      string `json:"type"`
		} `json:"ref"`
		RefID    string `json:"refId"`
		FromHash string `json:"fromHash"`
		ToHash   string `json:"toHash"`
		Type     string `json:"type"`
	} `json:"changes"`
}

// parseBitbucket reads a Bitbucket Cloud or Data Center delivery.
func parseBitbucket(req Request) (Delivery, error) {
	d := Delivery{
		ID:    firstHeader(req.Header, "X-Request-UUID", "X-Request-Id", "X-Hook-UUID"),
		Event: req.Header.Get("X-Event-Key"),
	}
	switch d.Event {
	case "":
		return Delivery{}, errors.New("no event header")
	case bitbucketDCPing:
		d.Kind = KindPing
		return d, nil
	case bitbucketCloudPush:
		return parseBitbucketCloud(d, req.Body)
	case bitbucketDCPush:
		return parseBitbucketDC(d, req.Body)
	default:
		d.Kind = KindOther
		return d, nil
	}
}

// parseBitbucketCloud reads the changes of a Bitbucket Cloud repo:push.
func parseBitbucketCloud(d Delivery, body []byte) (Delivery, error) {
	var p bitbucketCloudPayload
	if err := decodeJSON(body, &p); err != nil {
		return Delivery{}, err
	}
	base := Push{
		Repository: p.Repository.FullName,
		Sender:     orElse(p.Actor.Username, p.Actor.Nickname, p.Actor.DisplayName),
	}
	if href := p.Repository.Links.HTML.Href; href != "" {
		base.RepositoryURL = strings.TrimSuffix(href, "/") + ".git"
	}
	pushes := make([]Push, 0, len(p.Push.Changes))
	for i, change := range p.Push.Changes {
		push, err := bitbucketCloudChange(base, change.New, change.Old)
		if err != nil {
			return Delivery{}, fmt.Errorf("change %d: %w", i, err)
		}
		pushes = append(pushes, push)
	}
	return withPushes(d, pushes), nil
}

// bitbucketCloudChange makes the push of one change: new is nil for a deletion, old for a
// creation.
func bitbucketCloudChange(push Push, newRef, oldRef *bitbucketCloudRef) (Push, error) {
	ref := newRef
	if ref == nil {
		ref = oldRef
	}
	if ref == nil {
		return Push{}, errors.New("neither new nor old ref")
	}
	switch ref.Type {
	case "branch":
		push.Ref = branchPrefix + ref.Name
	case "tag", "annotated_tag":
		push.Ref = tagPrefix + ref.Name
	default:
		return Push{}, errors.New("ref type is not branch or tag")
	}
	if newRef != nil {
		push.Commit = newRef.Target.Hash
	} else {
		push.Deleted = true
	}
	if oldRef != nil {
		push.Before = oldRef.Target.Hash
	} else {
		push.Before = zeroSHA(len(push.Commit))
	}
	return finishPush(push)
}

// parseBitbucketDC reads the changes of a Bitbucket Data Center repo:refs_changed.
func parseBitbucketDC(d Delivery, body []byte) (Delivery, error) {
	var p bitbucketDCPayload
	if err := decodeJSON(body, &p); err != nil {
		return Delivery{}, err
	}
	base := Push{Sender: p.Actor.Name}
	if p.Repository.Project.Key != "" && p.Repository.Slug != "" {
		base.Repository = p.Repository.Project.Key + "/" + p.Repository.Slug
	}
	for _, link := range p.Repository.Links.Clone {
		switch link.Name {
		case "http", "https":
			base.RepositoryURL = orElse(base.RepositoryURL, link.Href)
		case "ssh":
			base.SSHURL = orElse(base.SSHURL, link.Href)
		}
	}
	pushes := make([]Push, 0, len(p.Changes))
	for i, change := range p.Changes {
		push := base
		push.Ref = orElse(change.Ref.ID, change.RefID, bitbucketDCRef(change.Ref.Type, change.Ref.DisplayID))
		push.Before, push.Commit = change.FromHash, change.ToHash
		push.Deleted = change.Type == "DELETE"
		push, err := finishPush(push)
		if err != nil {
			return Delivery{}, fmt.Errorf("change %d: %w", i, err)
		}
		pushes = append(pushes, push)
	}
	return withPushes(d, pushes), nil
}

// bitbucketDCRef is the full ref of a Data Center ref given only by type and display id.
func bitbucketDCRef(refType, displayID string) string {
	switch {
	case displayID == "":
		return ""
	case refType == "BRANCH":
		return branchPrefix + displayID
	case refType == "TAG":
		return tagPrefix + displayID
	}
	return ""
}
