package rollout

import (
	"fmt"
	"time"

	"github.com/sealane/sealane/pkg/specfile"
	"go.yaml.in/yaml/v3"
)

// decoder walks the YAML node tree of a spec (pkg/specfile), collecting every problem with
// its line rather than stopping at the first.
type decoder struct{ *specfile.Decoder }

func newDecoder() *decoder { return &decoder{specfile.NewDecoder()} }

// duration reads a Go duration ("10m", "1h30m") of at least 0; 0 when absent.
func (d *decoder) duration(n *yaml.Node, field string, positive bool) time.Duration {
	if n == nil {
		return 0
	}
	v, err := parseDuration(d.Str(n, field), positive)
	if err != nil {
		d.Addf(n, field, "%v", err)
	}
	return v
}

// quantity reads a Quantity of at least minimum; the zero Quantity when absent.
func (d *decoder) quantity(n *yaml.Node, field string, minimum int) Quantity {
	if n == nil {
		return Quantity{}
	}
	q, err := ParseQuantity(d.Str(n, field), minimum)
	if err != nil {
		d.Addf(n, field, "%v", err)
	}
	return q
}

// parseDuration reads a Go duration, refusing negative ones (and 0 when positive).
func parseDuration(s string, positive bool) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration: use Go syntax, e.g. 90s, 10m, 1h30m", s)
	case v < 0 || positive && v == 0:
		return 0, fmt.Errorf("%q: give a duration above 0", s)
	}
	return v, nil
}
