package events

import "time"

// LogStream says where a log line comes from.
type LogStream string

// The sources of log lines.
const (
	LogStdout LogStream = "stdout"
	LogStderr LogStream = "stderr"
	// LogEvent lines are Kubernetes events about the resource or its pods
	// (werf.io/show-service-messages, or the resource that failed the deploy).
	LogEvent LogStream = "event"
	// LogNotice lines are sealane's own notes about tracking the resource, such as logs it
	// does not follow (a limit reached).
	LogNotice LogStream = "notice"
)

// LogLine is one line of a container's output or one Kubernetes event.
type LogLine struct {
	Time   time.Time `json:"time"`
	Stream LogStream `json:"stream,omitempty"`
	Text   string    `json:"text"`
}

// LogLinesData is the payload of LogLines: a batch of lines from one container of one pod of a
// tracked resource (Container empty for events). Dropped counts lines left out to keep to the
// rate and size limits since the previous batch.
type LogLinesData struct {
	Target    Target      `json:"target"`
	Revision  int         `json:"revision"`
	Phase     int         `json:"phase"`
	Resource  ResourceRef `json:"resource"`
	Pod       string      `json:"pod,omitempty"`
	Container string      `json:"container,omitempty"`
	Lines     []LogLine   `json:"lines"`
	Dropped   int         `json:"dropped,omitempty"`
}

// WebhookData is the payload of the webhook audit events (WebhookAccepted, WebhookRejected,
// WebhookIgnored, WebhookDuplicate): one per signed request to a receiver (one per deploy for an
// accepted push), and for refused requests one WebhookRejected per interval with Refused. It
// never carries a secret or the request's body; every text in it is at most 256 bytes.
type WebhookData struct {
	Receiver string `json:"receiver"`
	// Provider is the receiver's type: github, gitlab, bitbucket, generic-hmac,
	// standard-webhooks or cloudevents.
	Provider   string `json:"provider"`
	DeliveryID string `json:"deliveryId,omitempty"`
	// Event is the provider's event name as sent (push, Push Hook, repo:refs_changed...).
	Event      string `json:"event,omitempty"`
	Repository string `json:"repository,omitempty"`
	Ref        string `json:"ref,omitempty"`
	Commit     string `json:"commit,omitempty"`
	Sender     string `json:"sender,omitempty"`
	// Status is the HTTP status the request was answered with.
	Status int `json:"status"`
	// Reason says why a request was rejected (signature, size, rate, malformed, method,
	// content-type, timeout, unknown route...) or ignored.
	Reason string `json:"reason,omitempty"`
	// Route is the index of the receiver's route that matched (accepted, duplicate).
	Route *int `json:"route,omitempty"`
	// DeployID is the deploy the push started (accepted) or started earlier (duplicate).
	DeployID string `json:"deployId,omitempty"`
	// RolloutID is the fleet rollout the push started (or started earlier) by a route that
	// names a rollout; DeployID is empty then.
	RolloutID string `json:"rolloutId,omitempty"`
	// RemoteAddr is the client's address as the server saw it.
	RemoteAddr string `json:"remoteAddr,omitempty"`
	// Refused sums up the requests refused in one interval (a WebhookRejected summary).
	Refused *WebhookRefused `json:"refused,omitempty"`
}

// WebhookRefused counts the requests the webhook intake refused in one interval, by receiver
// and reason, with the sources that sent the most.
type WebhookRefused struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Total is every request refused in the interval.
	Total int `json:"total"`
	// Counts are by receiver ("(unknown)" for ids no receiver has) and reason; past a bound
	// the rest is counted under receiver "(other)".
	Counts []WebhookRefusedCount `json:"counts"`
	// Sources are the client addresses that sent the most refused requests, most first.
	Sources []WebhookSourceCount `json:"sources,omitempty"`
}

// WebhookRefusedCount is how many requests to one receiver were refused for one reason.
type WebhookRefusedCount struct {
	Receiver string `json:"receiver"`
	Reason   string `json:"reason"`
	Status   int    `json:"status"`
	Count    int    `json:"count"`
}

// WebhookSourceCount is how many refused requests one client address sent.
type WebhookSourceCount struct {
	Addr  string `json:"addr"`
	Count int    `json:"count"`
}
