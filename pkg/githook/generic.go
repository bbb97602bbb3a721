package githook

import "errors"

// genericDeliveryHeader carries the delivery id of a generic-hmac delivery.
const genericDeliveryHeader = "X-Delivery-Id"

// genericPayload is sealane's generic push payload (generic-hmac, standard-webhooks and the data
// of a CloudEvent):
//
//	{"event":"push","repository":"acme/app","url":"https://git.example/acme/app.git",
//	 "ref":"refs/heads/main","before":"…","commit":"<sha>","sender":"alice","deleted":false}
type genericPayload struct {
	Event      string `json:"event"`
	Repository string `json:"repository"`
	URL        string `json:"url"`
	Ref        string `json:"ref"`
	Before     string `json:"before"`
	Commit     string `json:"commit"`
	Sender     string `json:"sender"`
	Deleted    bool   `json:"deleted"`
}

// parseGeneric reads a generic push payload into d. The event is the payload's, "push" when
// absent, unless d already has one (a CloudEvent type).
func parseGeneric(d Delivery, body []byte) (Delivery, error) {
	if len(body) == 0 {
		return Delivery{}, errors.New("empty body")
	}
	var p genericPayload
	if err := decodeJSON(body, &p); err != nil {
		return Delivery{}, err
	}
	event := orElse(p.Event, "push")
	d.Event = orElse(d.Event, event)
	switch event {
	case "ping":
		d.Kind = KindPing
		return d, nil
	case "push":
	default:
		d.Kind = KindOther
		return d, nil
	}
	push, err := finishPush(Push{
		Repository:    p.Repository,
		RepositoryURL: p.URL,
		Ref:           p.Ref,
		Before:        p.Before,
		Commit:        p.Commit,
		Deleted:       p.Deleted,
		Sender:        p.Sender,
	})
	if err != nil {
		return Delivery{}, err
	}
	return withPushes(d, []Push{push}), nil
}
