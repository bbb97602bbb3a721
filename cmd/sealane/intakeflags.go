package main

import (
	"github.com/spf13/cobra"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/serve"
)

// addIntakeFlags adds the renderer's intake flags to `sealane serve` (see
// serve.IntakeFlags); their defaults come from the environment.
func addIntakeFlags(cmd *cobra.Command) *serve.IntakeFlags {
	f := serve.IntakeFlagsFromEnv()
	cmd.Flags().StringSliceVar(&f.AllowChartSources, "allow-chart-source", f.AllowChartSources, serve.UsageAllowChartSource)
	cmd.Flags().StringVar(&f.ClientKeys, "client-keys", f.ClientKeys, serve.UsageClientKeys)
	cmd.Flags().DurationVar(&f.RequestMaxAge, "request-max-age", f.RequestMaxAge, serve.UsageRequestMaxAge)
	cmd.Flags().StringVar(&f.MaxChartSize, "max-chart-size", f.MaxChartSize, serve.UsageMaxChartSize)
	cmd.Flags().DurationVar(&f.ChartFetchTimeout, "chart-fetch-timeout", f.ChartFetchTimeout, serve.UsageChartFetchTimeout)
	cmd.Flags().StringVar(&f.GitCredentials, "git-credentials", f.GitCredentials, serve.UsageGitCredentials)
	cmd.Flags().StringVar(&f.GitCacheDir, "git-cache-dir", f.GitCacheDir, serve.UsageGitCacheDir)
	return &f
}

// runsRenderer says whether the stages named for `sealane serve` include the renderer.
func runsRenderer(names []events.Stage) bool {
	for _, n := range names {
		if n == events.StageRenderer || n == "all" {
			return true
		}
	}
	return false
}
