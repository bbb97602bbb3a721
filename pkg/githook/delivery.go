package githook

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Kind is what a delivery, or one push of it, is.
type Kind string

// The kinds of deliveries and pushes.
const (
	// KindPush is a branch push (refs/heads/...).
	KindPush Kind = "push"
	// KindTagPush is a tag push (refs/tags/...).
	KindTagPush Kind = "tag_push"
	// KindPing is the provider's test delivery.
	KindPing Kind = "ping"
	// KindOther is any other event, or a push of a ref outside refs/heads/ and refs/tags/.
	KindOther Kind = "other"
)

// Delivery is one webhook delivery as read by Parse.
type Delivery struct {
	// ID identifies the delivery for deduplication; "" when the provider sent none.
	ID string
	// Event is the provider's event name as sent: "push", "Push Hook", "repo:push",
	// "repo:refs_changed", a CloudEvent type.
	Event string
	// Kind is the delivery's kind as a whole: KindPush when a branch was pushed, else
	// KindTagPush when a tag was, else KindPing or KindOther.
	Kind Kind
	// Pushes has one entry per ref changed (Bitbucket can send several); empty for ping and
	// other events.
	Pushes []Push
}

// Push is one ref changed by a push.
type Push struct {
	// Kind is KindPush for a branch, KindTagPush for a tag, KindOther for a ref elsewhere under
	// refs/ (such a push has neither Branch nor Tag).
	Kind Kind
	// Repository is the full name: "acme/app", GitLab "group/sub/app", Bitbucket DC "PROJ/repo".
	Repository string
	// RepositoryURL is the https clone URL when the payload has one ("…/app.git"), else the web URL.
	RepositoryURL string
	// SSHURL is the ssh clone URL when the payload has one.
	SSHURL string
	// Ref is the full ref: refs/heads/main, refs/tags/v1.2.0.
	Ref string
	// Branch and Tag are the short names; exactly one is set for KindPush and KindTagPush.
	Branch, Tag string
	// Before is the sha the ref pointed at before the push: all zeros when the ref was created,
	// "" when the payload has none.
	Before string
	// Commit is the pushed (after) sha; all zeros when Deleted.
	Commit string
	// Deleted is a branch or tag deletion.
	Deleted bool
	// Sender is the pusher's login or username.
	Sender string
}

const (
	branchPrefix = "refs/heads/"
	tagPrefix    = "refs/tags/"
)

// finishPush classifies a push by its ref, settles Deleted and Commit, and checks the shas.
func finishPush(p Push) (Push, error) {
	if p.Repository == "" {
		return Push{}, errors.New("push names no repository")
	}
	switch {
	case strings.HasPrefix(p.Ref, branchPrefix) && len(p.Ref) > len(branchPrefix):
		p.Kind, p.Branch, p.Tag = KindPush, strings.TrimPrefix(p.Ref, branchPrefix), ""
	case strings.HasPrefix(p.Ref, tagPrefix) && len(p.Ref) > len(tagPrefix):
		p.Kind, p.Branch, p.Tag = KindTagPush, "", strings.TrimPrefix(p.Ref, tagPrefix)
	case strings.HasPrefix(p.Ref, "refs/") && p.Ref != branchPrefix && p.Ref != tagPrefix:
		p.Kind, p.Branch, p.Tag = KindOther, "", ""
	default:
		return Push{}, errors.New("push ref is not a full ref under refs/")
	}
	if p.Before != "" && !isSHA(p.Before) {
		return Push{}, errors.New("push before is not a 40 or 64 hex digit sha")
	}
	if isZeroSHA(p.Commit) {
		p.Deleted = true
	}
	switch {
	case p.Deleted && !isZeroSHA(p.Commit):
		p.Commit = zeroSHA(len(p.Before))
	case !p.Deleted && !isSHA(p.Commit):
		return Push{}, errors.New("pushed commit is not a 40 or 64 hex digit sha")
	}
	return p, nil
}

// withPushes sets the delivery's pushes and its kind from them.
func withPushes(d Delivery, pushes []Push) Delivery {
	d.Pushes = pushes
	d.Kind = KindOther
	for _, p := range pushes {
		if p.Kind == KindPush {
			d.Kind = KindPush
			break
		}
		if p.Kind == KindTagPush {
			d.Kind = KindTagPush
		}
	}
	return d
}

// isSHA reports whether s is a SHA-1 or SHA-256 object name in hex (either case).
func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// isZeroSHA reports whether s is the all-zeros sha git hosts send for a missing side.
func isZeroSHA(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0") == ""
}

// zeroSHA is the zero sha of the given length (64 for SHA-256, else 40).
func zeroSHA(length int) string {
	if length == 64 {
		return strings.Repeat("0", 64)
	}
	return strings.Repeat("0", 40)
}

// decodeJSON unmarshals a payload, describing a failure without quoting the payload.
func decodeJSON(body []byte, v any) error {
	err := json.Unmarshal(body, v)
	if err == nil {
		return nil
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("invalid JSON at offset %d", syntaxErr.Offset)
	case errors.As(err, &typeErr):
		return fmt.Errorf("JSON field %q: want %s", typeErr.Field, typeErr.Type)
	default:
		return errors.New("invalid JSON")
	}
}
