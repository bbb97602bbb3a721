package rollout

import (
	"fmt"
	"strconv"
	"strings"
)

// Quantity is a number of clusters, or a percentage of a set of clusters ("25%").
type Quantity struct {
	N       int  `json:"n"`
	Percent bool `json:"percent,omitempty"`
}

// Count is the Quantity of n clusters.
func Count(n int) Quantity { return Quantity{N: n} }

// Percent is the Quantity of p percent of the clusters.
func Percent(p int) Quantity { return Quantity{N: p, Percent: true} }

// IsZero reports the zero Quantity (also what an unset field holds).
func (q Quantity) IsZero() bool { return q == Quantity{} }

// String is the quantity as written: "3" or "25%".
func (q Quantity) String() string {
	if q.Percent {
		return strconv.Itoa(q.N) + "%"
	}
	return strconv.Itoa(q.N)
}

// Ceil is the quantity of total clusters rounded up, at least 1 (for maxParallel).
func (q Quantity) Ceil(total int) int {
	if !q.Percent {
		return max(q.N, 1)
	}
	return max((total*q.N+99)/100, 1)
}

// Floor is the quantity of total clusters rounded down (for failure limits).
func (q Quantity) Floor(total int) int {
	if !q.Percent {
		return q.N
	}
	return total * q.N / 100
}

// ParseQuantity reads "3" (at least min) or "25%" (an integer from 1 to 100 with %).
func ParseQuantity(s string, minimum int) (Quantity, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 100 || strings.TrimSpace(p) != p || strings.HasPrefix(p, "+") {
			return Quantity{}, fmt.Errorf("%q is not a percentage: give an integer from 1 to 100 followed by %%, e.g. 25%%", s)
		}
		return Percent(n), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < minimum || strings.HasPrefix(s, "+") {
		return Quantity{}, fmt.Errorf("%q is not a number of at least %d or a percentage (e.g. 25%%)", s, minimum)
	}
	return Count(n), nil
}
