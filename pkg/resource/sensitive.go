package resource

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ohler55/ojg/jp"
)

// ParseSensitivePaths parses a werf.io/sensitive-paths value: JSONPaths separated by commas,
// "\," being a comma inside a path, e.g. "$.spec.template.spec.containers[*].env[*].value,$.data.*".
func ParseSensitivePaths(v string) ([]jp.Expr, error) {
	var (
		raw []string
		cur strings.Builder
		esc bool
	)
	for _, r := range v {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\':
			esc = true
		case r == ',':
			raw = append(raw, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	raw = append(raw, cur.String())
	out := make([]jp.Expr, 0, len(raw))
	for _, p := range raw {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, errors.New(`must be comma-separated JSONPaths without empty items, e.g. "$.data.*,$.spec.template.spec.containers[*].env[*].value"`)
		}
		x, err := jp.ParseString(p)
		if err != nil {
			return nil, fmt.Errorf("JSONPath %q does not parse: %v", p, err)
		}
		out = append(out, x)
	}
	return out, nil
}
