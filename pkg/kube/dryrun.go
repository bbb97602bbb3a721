package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// ErrWriteRefused is returned (wrapped) by a DryRunOnly cluster for a request that could
// change the cluster.
var ErrWriteRefused = errors.New("refused: this command only reads and dry-runs, and the request could write")

// DryRunOnly returns a Cluster like c whose clients cannot change the cluster: every request
// other than GET, HEAD and OPTIONS must be a dry run (dryRun=All in the query, or for a DELETE
// in its DeleteOptions body), or it fails with ErrWriteRefused without reaching the apiserver.
// Commands that promise not to write (sealane plan) use it so that a bug cannot break the
// promise.
func DryRunOnly(c *Cluster) (*Cluster, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return dryRunOnly{rt} })
	return NewCluster(c.Name, cfg)
}

type dryRunOnly struct{ next http.RoundTripper }

func (d dryRunOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := checkDryRun(r); err != nil {
		if r.Body != nil {
			_ = r.Body.Close() // a RoundTripper must close the body, even on error
		}
		return nil, err
	}
	return d.next.RoundTrip(r)
}

// checkDryRun returns nil for a request that cannot write. A DELETE's body is read and put
// back.
func checkDryRun(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if slices.Contains(r.URL.Query()["dryRun"], metav1.DryRunAll) {
		return nil
	}
	if r.Method == http.MethodDelete && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return fmt.Errorf("%w: %s %s: read body: %v", ErrWriteRefused, r.Method, r.URL.Path, err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var opts metav1.DeleteOptions
		if json.Unmarshal(body, &opts) == nil && slices.Contains(opts.DryRun, metav1.DryRunAll) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s %s", ErrWriteRefused, r.Method, r.URL.Path)
}
