package renderer

import (
	"context"
	"errors"
	"fmt"

	"github.com/sealane/sealane/events"
	"github.com/sealane/sealane/pkg/chartsource"
	"github.com/sealane/sealane/pkg/pipeline/stagekit"
)

// storeRemoteChart fetches a chart the request names by repository or OCI reference, stores
// the packed archive in the Object Store and returns the source pointing at it.
// opts bound its size and time and say which sources are allowed (fetchOptions).
func storeRemoteChart(ctx context.Context, blobs stagekit.Blobs, src events.ChartSource, opts chartsource.Options) (events.ChartSource, error) {
	archive, meta, digest, err := chartsource.Resolve(ctx, chartsource.NewSource(src.Name, src.Repo, src.Version), opts)
	if err != nil {
		return src, fmt.Errorf("fetch chart %s: %w", chartsource.NewSource(src.Name, src.Repo, src.Version), err)
	}
	ref, err := blobs.PutBlob(ctx, "charts/"+digest, archive)
	if err != nil {
		return src, err
	}
	return events.ChartSource{Ref: ref, Digest: digest, Name: meta.Name, Version: meta.Version, Repo: src.Repo}, nil
}

// chartMissing reports whether fetching failed because the chart or version does not exist,
// which retrying cannot fix.
func chartMissing(err error) bool {
	return errors.Is(err, chartsource.ErrChartNotFound) || errors.Is(err, chartsource.ErrVersionNotFound)
}
