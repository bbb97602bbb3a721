package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/slug"
)

func newSlugifyCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "slugify STRING",
		Short: "Print STRING as a valid release or namespace name, with werf's slug algorithm",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := slug.Make(slug.Format(format), args[0])
			if err != nil {
				return fmt.Errorf("--format: %w", err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), out)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", string(slug.FormatNamespace), "release (at most 53 characters) or namespace (at most 63)")
	return cmd
}
