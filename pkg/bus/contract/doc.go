// Package contract holds the behaviours every implementation of a bus-facing interface must
// show, as test suites that run against the in-memory implementations (package bustest) and
// JetStream alike: Blobs, KV and PubSub; Consumers (consume, ack, retry, dead letters,
// heartbeats, workers, replicas, asynchronous publishes) holds the embedded server and a
// cluster, as the router needs a real consumer.
package contract

import (
	"context"
	"testing"
	"time"
)

// callTimeout bounds each call a suite makes.
const callTimeout = 10 * time.Second

// ctx returns a context for one behaviour, ended with the test.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), callTimeout)
	t.Cleanup(cancel)
	return c
}
