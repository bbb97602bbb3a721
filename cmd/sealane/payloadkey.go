package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/serve"
)

// uploadKeyWait bounds how long a client waits for the pipeline's public payload key before
// it sends anything (starting stages publish it; tests shorten it).
var uploadKeyWait = 35 * time.Second

// checkKeyConfig reads the payload key settings a command was given (--payload-key-file,
// $SEALANE_PAYLOAD_KEY, $SEALANE_PAYLOAD_PUBLIC_KEY), so that a bad one is reported, naming
// where it came from, before anything connects.
func checkKeyConfig(g *globalFlags) error {
	if _, _, err := payload.FromConfig(g.PayloadKeyFile); err != nil {
		return fmt.Errorf("payload key (--payload-key-file, $%s or $%s): %w", serve.PayloadKeyFileEnv, payload.EnvKey, err)
	}
	if _, err := payload.PublicKeyFromEnv(); err != nil {
		return fmt.Errorf("public payload key: %w", err)
	}
	return nil
}

// checkUploadKey makes sure a client of a shared pipeline can seal its chart and values
// before it packs or sends anything: the public payload key must be configured, or
// published by the pipeline's stages.
func checkUploadKey(ctx context.Context, node *serve.Node) error {
	ctx, cancel := context.WithTimeout(ctx, uploadKeyWait)
	defer cancel()
	if _, err := node.Bus.UploadKey(ctx); err != nil {
		// err names $SEALANE_PAYLOAD_PUBLIC_KEY and the KV bucket the stages publish the key in.
		return fmt.Errorf("the chart and values cannot be sealed, nothing was sent: %w; or give the payload key itself "+
			"with --payload-key-file FILE ($%s, $%s)", err, serve.PayloadKeyFileEnv, payload.EnvKey)
	}
	return nil
}
