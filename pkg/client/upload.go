package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/bus"
)

// Uploads is where a client stores the chart and the values: its own input bucket, sealed to
// the pipeline's public payload key. *bus.Bus is one.
type Uploads interface {
	OwnInputBucket() (string, error)
	PutInput(ctx context.Context, bucket, name string, data []byte) (string, error)
}

// Store stores the packed chart (charts/<digest>) and the values (inputs/<digest>, with
// replyKey, the key the renderer seals its replies with; "" for none) in the client's input
// bucket and returns the request data referring to them.
func (l Local) Store(ctx context.Context, b Uploads, replyKey string) (events.RequestedData, error) {
	out := l.Requested
	bucket, err := b.OwnInputBucket()
	if err != nil {
		return events.RequestedData{}, err
	}
	if l.Archive != nil {
		chartRef, err := b.PutInput(ctx, bucket, "charts/"+l.Digest, l.Archive)
		if err != nil {
			return events.RequestedData{}, err
		}
		out.Chart.Ref = chartRef
	}
	inputs := l.Inputs
	inputs.ReplyKey = replyKey
	raw, err := json.Marshal(inputs)
	if err != nil {
		return events.RequestedData{}, fmt.Errorf("encode values: %w", err)
	}
	if out.InputsRef, err = b.PutInput(ctx, bucket, bus.InputsName(raw), raw); err != nil {
		return events.RequestedData{}, err
	}
	return out, nil
}
