package main

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/webhook"
)

func newWebhookCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "webhook",
		Short: "Work with the git webhook receivers' configuration (sealane serve webhook)",
	}
	cmd.AddCommand(newWebhookValidateCmd())
	return cmd
}

func newWebhookValidateCmd() *cobra.Command {
	var printURLs bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a webhook receivers file: its fields, templates and secrets (read from the files and environment variables it names)",
		Long: "Check a webhook receivers file as `sealane serve webhook` loads it, secrets included: each\n" +
			"problem is printed as FILE:LINE: FIELD: what to do, and the command fails. Secrets are\n" +
			"never printed.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWebhookValidate(cmd, args[0], printURLs)
		},
	}
	cmd.Flags().BoolVar(&printURLs, "print-urls", false, "also list each receiver's URL path, type and number of routes")
	return cmd
}

func runWebhookValidate(cmd *cobra.Command, file string, printURLs bool) error {
	cfg, err := webhook.LoadConfig(file, os.LookupEnv)
	var ce *webhook.ConfigError
	if errors.As(err, &ce) {
		fmt.Fprintln(cmd.ErrOrStderr(), ce.Error())
		return &exitError{code: 1, err: fmt.Errorf("%s: %d %s", file, len(ce.Problems), plural(len(ce.Problems), "problem"))}
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if _, err := fmt.Fprintf(out, "%s: %d %s, %d %s: valid\n", file, len(cfg.Receivers), plural(len(cfg.Receivers), "receiver"),
		cfg.RouteCount(), plural(cfg.RouteCount(), "route")); err != nil {
		return err
	}
	if !printURLs {
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URL\tTYPE\tROUTES")
	for i := range cfg.Receivers {
		r := &cfg.Receivers[i]
		fmt.Fprintf(tw, "%s\t%s\t%d\n", r.URLPath(), r.Type, len(r.Routes))
	}
	return tw.Flush()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
