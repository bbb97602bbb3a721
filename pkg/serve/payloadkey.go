package serve

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/sealane/sealane/pkg/bus"
	"github.com/sealane/sealane/pkg/payload"
)

// PayloadKeyFileEnv is the environment variable with the default --payload-key-file.
const PayloadKeyFileEnv = "SEALANE_PAYLOAD_KEY_FILE"

// ErrNoPayloadKey means a service was started against a shared NATS without a payload key.
var ErrNoPayloadKey = errors.New("no payload key")

// payloadSealer finds the key that seals this node's blobs: Options.PayloadKeyFile, else
// $SEALANE_PAYLOAD_KEY, else for an embedded node <DataDir>/payload.key (created on first use).
// A remote node without a key gets a sealer that fails every blob operation with how to
// configure one; it can still follow events.
func (o Options) payloadSealer() (bus.Sealer, *payload.Key, error) {
	key, source, err := payload.FromConfig(o.PayloadKeyFile)
	if err != nil {
		return nil, nil, err
	}
	if key == nil && o.NATSURL == "" {
		path := filepath.Join(o.DataDir, payload.KeyFileName)
		var created bool
		if key, created, err = payload.LoadOrCreateKeyFile(path); err != nil {
			return nil, nil, fmt.Errorf("embedded pipeline's payload key: %w", err)
		}
		source = path
		if created {
			o.Log.Info("created the payload key of the embedded pipeline", zap.String("file", path), zap.String("keyID", key.ID()))
		}
	}
	if key == nil {
		return payload.Unkeyed{Pipeline: bus.RedactURL(o.NATSURL)}, nil, nil
	}
	o.Log.Debug("payload key", zap.String("keyID", key.ID()), zap.String("from", source))
	return key, key, nil
}

// PayloadKey is the key that seals this node's blobs, or nil for a remote node opened without
// one (then every blob operation fails, saying how to configure the key).
func (n *Node) PayloadKey() *payload.Key { return n.payloadKey }

// PublishPublicKey publishes the public half of the node's payload key for clients and the
// webhook (bus.KeyBucket), what a stage service does when it starts; a node without a payload
// key publishes nothing.
func (n *Node) PublishPublicKey(ctx context.Context) error {
	if n.payloadKey == nil {
		return nil
	}
	return n.Bus.PublishPublicKey(ctx, n.payloadKey)
}

// requirePayloadKey fails unless the node has a payload key: stages read and write blobs.
func (n *Node) requirePayloadKey() error {
	if n.payloadKey != nil {
		return nil
	}
	return fmt.Errorf("%w: the stages of a shared pipeline encrypt payloads at rest; set $%s (64 hex characters, e.g. from `openssl rand -hex 32`) "+
		"or pass --payload-key-file PATH, with the same key for every stage and the CLI", ErrNoPayloadKey, payload.EnvKey)
}
