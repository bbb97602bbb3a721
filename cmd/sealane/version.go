package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/sealane/sealane/pkg/version"
)

// buildInfo is what `sealane version` reports.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	Dirty   bool   `json:"dirty,omitempty"`
	Go      string `json:"go"`
	Helm    string `json:"helm"`
	NATS    string `json:"natsServer"`
}

// readBuildInfo fills buildInfo from version.String and the binary's build information.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version.String(), Commit: version.Commit, Go: runtime.Version(), Helm: "unknown", NATS: "unknown"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision": // stamped by go build outside a workspace
			if b.Commit == "" {
				b.Commit = s.Value
			}
		case "vcs.modified":
			b.Dirty = s.Value == "true"
		}
	}
	for _, d := range info.Deps {
		switch d.Path {
		case "helm.sh/helm/v3":
			b.Helm = d.Version
		case "github.com/nats-io/nats-server/v2":
			b.NATS = d.Version
		}
	}
	return b
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print sealane's version, commit, and the Go, Helm library and NATS server versions it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := readBuildInfo()
			switch output {
			case "json":
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(b)
			case "", "text":
				commit := b.Commit
				if commit == "" {
					commit = "unknown"
				} else if b.Dirty {
					commit += " (modified)"
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "sealane %s\ncommit: %s\ngo: %s\nhelm library: %s\nnats-server: %s\n",
					b.Version, commit, b.Go, b.Helm, b.NATS)
				return err
			default:
				return fmt.Errorf("--output %q: use text or json", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
