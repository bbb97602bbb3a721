package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/yaml"

	"github.com/sealane/sealane/pkg/release"
)

type getFlags struct {
	recordFlags
	revision int
}

func (f *getFlags) register(cmd *cobra.Command, g *globalFlags) {
	f.recordFlags.register(cmd.Flags())
	g.addKubeFlags(cmd)
	cmd.ValidArgsFunction = g.completeReleases
	cmd.Flags().IntVar(&f.revision, "revision", 0, "the revision to show (default: the newest, whatever its status)")
}

func newGetCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get manifest|values|notes|hooks RELEASE",
		Short: "Show what a release revision holds (its manifest, values, notes or hooks), like `helm get`",
		Long: "Reads one revision of the release's records straight from the cluster, whoever made it — sealane " +
			"or helm — and prints it as `helm get` does. `get values` prints the values the release was deployed " +
			"with, secret values included: they were asked for; they are never logged.",
	}
	cmd.AddCommand(
		newGetPartCmd(g, "manifest", "the rendered manifest of the revision (hooks excluded), like `helm get manifest`",
			func(w io.Writer, rel *helmrelease.Release) error {
				_, err := fmt.Fprintln(w, rel.Manifest)
				return err
			}),
		newGetPartCmd(g, "notes", "the rendered NOTES.txt of the revision, like `helm get notes`",
			func(w io.Writer, rel *helmrelease.Release) error {
				if rel.Info != nil && len(rel.Info.Notes) > 0 {
					_, err := fmt.Fprintf(w, "NOTES:\n%s\n", rel.Info.Notes)
					return err
				}
				return nil
			}),
		newGetPartCmd(g, "hooks", "the hook manifests of the revision, like `helm get hooks`",
			func(w io.Writer, rel *helmrelease.Release) error {
				for _, h := range rel.Hooks {
					if _, err := fmt.Fprintf(w, "---\n# Source: %s\n%s\n", h.Path, h.Manifest); err != nil {
						return err
					}
				}
				return nil
			}),
		newGetValuesCmd(g),
	)
	return cmd
}

// newGetPartCmd is a `get` subcommand printing one part of a revision with show.
func newGetPartCmd(g *globalFlags, part, what string, show func(io.Writer, *helmrelease.Release) error) *cobra.Command {
	f := &getFlags{}
	cmd := &cobra.Command{
		Use:   part + " RELEASE",
		Short: "Show " + what,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rel, err := f.get(cmd.Context(), g, args[0])
			if err != nil {
				return err
			}
			return show(cmd.OutOrStdout(), rel)
		},
	}
	f.register(cmd, g)
	return cmd
}

func newGetValuesCmd(g *globalFlags) *cobra.Command {
	f := &getFlags{}
	var (
		all    bool
		output string
	)
	cmd := &cobra.Command{
		Use:   "values RELEASE",
		Short: "Show the user-supplied values of the revision (all computed values with --all), like `helm get values`",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" && output != "yaml" {
				return fmt.Errorf("--output %q: use table, json or yaml", output)
			}
			rel, err := f.get(cmd.Context(), g, args[0])
			if err != nil {
				return err
			}
			vals := map[string]any(rel.Config)
			if all {
				if vals, err = chartutil.CoalesceValues(rel.Chart, rel.Config); err != nil {
					return fmt.Errorf("values of release %s revision %d: coalesce with the chart's defaults: %w", rel.Name, rel.Version, err)
				}
			}
			return writeValues(cmd.OutOrStdout(), vals, all, output)
		},
	}
	f.register(cmd, g)
	cmd.Flags().BoolVarP(&all, "all", "a", false, "all computed values: the chart's defaults merged with the user-supplied ones")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "table (YAML under a heading, as helm), json or yaml")
	return cmd
}

// writeValues prints values as `helm get values` does in each output format.
func writeValues(w io.Writer, vals map[string]any, all bool, output string) error {
	if output == "json" {
		return json.NewEncoder(w).Encode(vals)
	}
	if output == "table" {
		heading := "USER-SUPPLIED VALUES:"
		if all {
			heading = "COMPUTED VALUES:"
		}
		if _, err := fmt.Fprintln(w, heading); err != nil {
			return err
		}
	}
	raw, err := yaml.Marshal(vals)
	if err != nil {
		return fmt.Errorf("encode values: %w", err)
	}
	_, err = w.Write(raw)
	return err
}

// get reads the asked revision of the release (the newest without --revision).
func (f *getFlags) get(ctx context.Context, g *globalFlags, name string) (*helmrelease.Release, error) {
	if f.revision < 0 {
		return nil, fmt.Errorf("--revision %d: want a positive revision", f.revision)
	}
	r, err := f.open(g)
	if err != nil {
		return nil, err
	}
	store := r.store(name)
	if f.revision == 0 {
		rel, err := store.Last(ctx, name)
		if errors.Is(err, release.ErrNotFound) {
			return nil, fmt.Errorf("release %s: not found in %s (see `sealane list -A`)", name, r.where())
		}
		if err != nil {
			return nil, fmt.Errorf("release %s in %s: %w", name, r.where(), err)
		}
		return rel, nil
	}
	rel, err := store.Get(ctx, name, f.revision)
	if errors.Is(err, release.ErrNotFound) {
		return nil, fmt.Errorf("release %s: no revision %d in %s (see `sealane history %s -n %s`)", name, f.revision, r.where(), name, r.namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("release %s revision %d in %s: %w", name, f.revision, r.where(), err)
	}
	return rel, nil
}
