package renderer

import (
	"context"
	"fmt"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

// Replies are what the renderer hands back to the client that asked — a render's notes, a plan
// report — in the client's own input bucket, sealed with the reply key the client put in its
// sealed inputs: a client that holds only the pipeline's public key reads its own replies and
// nobody else's, and never the render bundle itself.

// Reply names: replies/<deploy id>/<what>.
const (
	replyNotes = "notes"
	replyPlan  = "plan"
)

// ReplyName is the name of a deploy's reply in its client's input bucket.
func ReplyName(deployID, what string) string { return "replies/" + deployID + "/" + what }

// replier stores replies; *bus.Bus is one.
type replier interface {
	PutReply(ctx context.Context, bucket, name string, key *payload.Key, data []byte) (string, error)
}

// replyTo is where and how a request's replies go; nil when the request asked for none.
type replyTo struct {
	bucket string
	key    *payload.Key
}

// replyOf reads the reply key of a request's inputs (then cleared from them: it is no value).
func replyOf(inputsRef string, replyKey *string) (*replyTo, error) {
	hexKey := *replyKey
	*replyKey = ""
	if hexKey == "" || inputsRef == "" {
		return nil, nil
	}
	bucket, _, err := bus.ParseBlobRef(inputsRef)
	if err != nil {
		return nil, fmt.Errorf("values %s: %w", inputsRef, err)
	}
	key, err := payload.ParseKey(hexKey)
	if err != nil {
		return nil, fmt.Errorf("values %s: reply key: %w", inputsRef, err)
	}
	return &replyTo{bucket: bucket, key: key}, nil
}

// put stores a reply and returns its reference; "" when there is nowhere to put it.
func (t *replyTo) put(ctx context.Context, blobs stagekit.Blobs, deployID, what string, data []byte) (string, error) {
	if t == nil {
		return "", nil
	}
	r, ok := blobs.(replier)
	if !ok {
		return "", nil
	}
	ref, err := r.PutReply(ctx, t.bucket, ReplyName(deployID, what), t.key, data)
	if err != nil {
		return "", fmt.Errorf("reply %s of deploy %s: %w", what, deployID, err)
	}
	return ref, nil
}

// ReplyReader reads replies; *bus.Bus is one.
type ReplyReader interface {
	GetReply(ctx context.Context, ref string, key *payload.Key) ([]byte, error)
}
