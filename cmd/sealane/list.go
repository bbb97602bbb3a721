package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
	helmchart "helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"

	"github.com/sealane/sealane/pkg/release"
)

type listFlags struct {
	recordFlags
	allNamespaces bool
	all           bool
	output        string
}

func newListCmd(g *globalFlags) *cobra.Command {
	f := &listFlags{}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the releases of a namespace (or all), from their Helm release records, like `helm list`",
		Long: "Reads the release records (Helm 3 storage: Secrets, or ConfigMaps with --release-storage configmap) " +
			"straight from the cluster and shows the newest revision of each release, whoever made it — sealane " +
			"or helm. Like `helm list`, only deployed and failed releases are shown unless --all is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runList(cmd.Context(), g, f, cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	f.recordFlags.register(fl)
	g.addKubeFlags(cmd)
	fl.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "list the releases of every namespace")
	fl.BoolVarP(&f.all, "all", "a", false, "show releases in every status (pending, superseded, uninstalled...), not only deployed and failed")
	fl.StringVarP(&f.output, "output", "o", "table", "table or json (the fields of `helm list -o json`)")
	return cmd
}

func runList(ctx context.Context, g *globalFlags, f *listFlags, out io.Writer) error {
	if f.output != "table" && f.output != "json" {
		return fmt.Errorf("--output %q: use table or json", f.output)
	}
	if f.allNamespaces && f.namespace != "" {
		return fmt.Errorf("--all-namespaces and --namespace %s: give one of them", f.namespace)
	}
	r, err := f.open(g)
	if err != nil {
		return err
	}
	opts := []release.Option{release.WithDriver(r.storage.Driver)}
	storageNS := r.storage.Namespace // with -A and no storage namespace: every namespace
	where := "all namespaces"
	if !f.allNamespaces {
		storageNS = release.StorageNamespace(r.namespace, r.storage.Namespace)
		if storageNS != r.namespace {
			opts = append(opts, release.WithReleaseNamespace(r.namespace))
		}
		where = r.where()
	}
	records, err := release.NewStore(r.cluster.Bounded(), storageNS, nil, opts...).List(ctx)
	if err != nil {
		return fmt.Errorf("list releases of %s: %w", where, err)
	}
	shown := listed(release.Latest(records), f.all)
	if f.output == "json" {
		return json.NewEncoder(out).Encode(listElements(shown))
	}
	return writeListTable(out, listElements(shown))
}

// listed keeps the releases `helm list` shows (deployed and failed ones, or all) sorted by
// name, then namespace.
func listed(latest []*helmrelease.Release, all bool) []*helmrelease.Release {
	var out []*helmrelease.Release
	for _, r := range latest {
		st := helmrelease.StatusUnknown
		if r.Info != nil {
			st = r.Info.Status
		}
		if all || st == helmrelease.StatusDeployed || st == helmrelease.StatusFailed {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Namespace < out[j].Namespace
	})
	return out
}

// listElement is one row of `sealane list`, with the JSON names of `helm list -o json`.
type listElement struct {
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Revision   string `json:"revision"`
	Updated    string `json:"updated"`
	Status     string `json:"status"`
	Chart      string `json:"chart"`
	AppVersion string `json:"app_version"`
}

func listElements(rels []*helmrelease.Release) []listElement {
	out := make([]listElement, 0, len(rels)) // [] rather than null in JSON, as helm
	for _, r := range rels {
		e := listElement{Name: r.Name, Namespace: r.Namespace, Revision: strconv.Itoa(r.Version), Updated: "-",
			Chart: chartName(r.Chart), AppVersion: appVersion(r.Chart)}
		if r.Info != nil {
			e.Status = r.Info.Status.String()
			if !r.Info.LastDeployed.IsZero() {
				e.Updated = r.Info.LastDeployed.String()
			}
		}
		out = append(out, e)
	}
	return out
}

func writeListTable(out io.Writer, rows []listElement) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tNAMESPACE\tREVISION\tUPDATED\tSTATUS\tCHART\tAPP VERSION")
	for _, e := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Namespace, e.Revision, e.Updated, e.Status, e.Chart, e.AppVersion)
	}
	return tw.Flush()
}

// chartName is "<name>-<version>" as helm shows it, MISSING for a record without a chart.
func chartName(c *helmchart.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return c.Name() + "-" + c.Metadata.Version
}

func appVersion(c *helmchart.Chart) string {
	if c == nil || c.Metadata == nil {
		return "MISSING"
	}
	return c.AppVersion()
}
