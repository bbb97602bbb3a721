package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/payload"
	"github.com/sealane/sealane/pkg/serve"
)

// newPayloadCmd is `sealane payload`; it reads the payload key only and connects to nothing.
func newPayloadCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "payload",
		Short: "Work with the pipeline's payload key (what encrypts stored charts, values and renders)",
	}
	var keyFile string
	pub := &cobra.Command{
		Use:   "public-key",
		Short: "Print the public half of the payload key, which clients and the webhook seal their uploads to",
		Long: `Prints the public payload key ("sealane-pub:" and 64 hex characters) of the key in
--payload-key-file or $` + payload.EnvKey + `. Give it to clients as $` + payload.EnvPublicKey + `
to pin it; without it they read the key the stages publish in the KV bucket sealane-keys.
It opens nothing: only the payload key, which the stages alone hold, does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, _, err := payload.FromConfig(keyFile)
			if err != nil {
				return err
			}
			if key == nil {
				return fmt.Errorf("no payload key: pass --payload-key-file PATH or set $%s (64 hex characters)", payload.EnvKey)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), key.PublicKey())
			return err
		},
	}
	pub.Flags().StringVar(&keyFile, "payload-key-file", os.Getenv(serve.PayloadKeyFileEnv),
		"file with the 64-hex-character payload key ($"+serve.PayloadKeyFileEnv+"; default $"+payload.EnvKey+")")
	cmd.AddCommand(pub)
	return cmd
}
