package githook

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// cloudEventsMediaType is the content type of a structured-mode CloudEvent.
const cloudEventsMediaType = "application/cloudevents+json"

// cloudEvent is a CloudEvent with the attributes read; in binary mode they come from ce-*
// headers and Data is the body.
type cloudEvent struct {
	SpecVersion string          `json:"specversion"`
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	Source      string          `json:"source"`
	Data        json.RawMessage `json:"data"`
}

// structured reports whether the request is a structured-mode CloudEvent.
func structured(req Request) bool {
	return mediaTypeOf(req.Header.Get("Content-Type")) == cloudEventsMediaType
}

// readCloudEvent reads the event's attributes and data from the request in either mode.
func readCloudEvent(req Request) (cloudEvent, error) {
	if !structured(req) {
		return cloudEvent{
			SpecVersion: req.Header.Get("ce-specversion"),
			ID:          req.Header.Get("ce-id"),
			Type:        req.Header.Get("ce-type"),
			Source:      req.Header.Get("ce-source"),
			Data:        req.Body,
		}, nil
	}
	var ce cloudEvent
	if err := decodeJSON(req.Body, &ce); err != nil {
		return cloudEvent{}, err
	}
	return ce, nil
}

// cloudEventID is the CloudEvent id of the request, false when there is none.
func cloudEventID(req Request) (string, bool) {
	ce, err := readCloudEvent(req)
	if err != nil || ce.ID == "" {
		return "", false
	}
	return ce.ID, true
}

// parseCloudEvent reads a CloudEvent whose data is the generic push payload; a type containing
// "ping" is a ping.
func parseCloudEvent(req Request) (Delivery, error) {
	ce, err := readCloudEvent(req)
	if err != nil {
		return Delivery{}, err
	}
	switch {
	case ce.SpecVersion != "1.0":
		return Delivery{}, errors.New("specversion is not 1.0")
	case ce.ID == "", ce.Type == "", ce.Source == "":
		return Delivery{}, errors.New("missing id, type or source attribute")
	}
	d := Delivery{ID: ce.ID, Event: ce.Type}
	if strings.Contains(ce.Type, "ping") {
		d.Kind = KindPing
		return d, nil
	}
	if data := bytes.TrimSpace(ce.Data); len(data) == 0 || bytes.Equal(data, []byte("null")) {
		return Delivery{}, errors.New("no data")
	}
	return parseGeneric(d, ce.Data)
}
