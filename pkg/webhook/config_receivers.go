package webhook

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sealane/sealane/pkg/specfile"
	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
)

var receiverIDRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// maxIDLen is the longest receiver id (a DNS label, so that it fits any name derived from it).
const maxIDLen = 63

func (d *decoder) config(root *yaml.Node) *Config {
	f := d.Fields(root, "", "receivers")
	if f == nil {
		return nil
	}
	cfg := &Config{}
	items := d.Items(f["receivers"], "receivers")
	if len(items) == 0 {
		line := specfile.Deref(root)
		if f["receivers"] != nil {
			line = f["receivers"]
		}
		d.Addf(line, "receivers", "no receivers: add at least one (id, type, secrets, routes)")
		return cfg
	}
	firstID := map[string]int{} // receiver id → index
	for i, n := range items {
		field := fmt.Sprintf("receivers[%d]", i)
		r, idNode := d.receiver(n, field)
		if r.ID != "" {
			if j, dup := firstID[r.ID]; dup {
				d.Addf(idNode, field+".id", "%q is already the id of receivers[%d]: ids must be unique", r.ID, j)
			} else {
				firstID[r.ID] = i
			}
		}
		cfg.Receivers = append(cfg.Receivers, r)
	}
	return cfg
}

var receiverKeys = []string{"id", "type", "secrets", "events", "maxBodySize", "rateLimit", "routes"}

// receiver decodes receivers[i]; it also returns the node of its id.
func (d *decoder) receiver(n *yaml.Node, field string) (Receiver, *yaml.Node) {
	r := Receiver{}
	f := d.Fields(n, field, receiverKeys...)
	if f == nil {
		return r, nil
	}
	n = specfile.Deref(n)

	r.ID = d.Str(f["id"], field+".id")
	switch {
	case f["id"] == nil || r.ID == "":
		d.Addf(n, field+".id", "missing: give the receiver an id, its URL is /hooks/<id>")
	case len(r.ID) > maxIDLen || !receiverIDRe.MatchString(r.ID):
		d.Addf(f["id"], field+".id", "%q is not a valid id: use at most %d lower-case letters, digits and '-', starting and ending with a letter or digit", r.ID, maxIDLen)
		r.ID = ""
	}

	r.Type = d.Str(f["type"], field+".type")
	switch {
	case f["type"] == nil || r.Type == "":
		d.Addf(n, field+".type", "missing: give one of %s", strings.Join(Types, ", "))
	case !slices.Contains(Types, r.Type):
		d.Addf(f["type"], field+".type", "unknown type %q: use one of %s", r.Type, strings.Join(Types, ", "))
	}

	r.secrets, r.SecretSources = d.secrets(n, f["secrets"], field+".secrets")
	r.Events = d.events(f["events"], field+".events")
	r.MaxBodySize = d.maxBodySize(f["maxBodySize"], field+".maxBodySize")
	r.RateLimit = d.rateLimit(f["rateLimit"], field+".rateLimit")

	routes := d.Items(f["routes"], field+".routes")
	if len(routes) == 0 {
		at := n
		if f["routes"] != nil {
			at = f["routes"]
		}
		d.Addf(at, field+".routes", "no routes: add at least one (repository, branches or tags, deploy), or no push would deploy anything")
	}
	for i, rn := range routes {
		r.Routes = append(r.Routes, d.route(rn, fmt.Sprintf("%s.routes[%d]", field, i), i, r.Events))
	}
	return r, f["id"]
}

func (d *decoder) events(n *yaml.Node, field string) []string {
	if n == nil {
		return []string{EventPush, EventTagPush}
	}
	var out []string
	items := d.Items(n, field)
	for i, in := range items {
		e := d.Str(in, fmt.Sprintf("%s[%d]", field, i))
		switch {
		case e != EventPush && e != EventTagPush:
			d.Addf(in, fmt.Sprintf("%s[%d]", field, i), "unknown event %q: use %s (branches) or %s (tags)", e, EventPush, EventTagPush)
		case slices.Contains(out, e):
			d.Addf(in, fmt.Sprintf("%s[%d]", field, i), "%q is listed twice: keep one", e)
		default:
			out = append(out, e)
		}
	}
	if len(items) == 0 && (specfile.IsNull(specfile.Deref(n)) || specfile.Deref(n).Kind == yaml.SequenceNode) {
		d.Addf(n, field, "empty: list %s and/or %s, or leave events out for both", EventPush, EventTagPush)
	}
	return out
}

func (d *decoder) maxBodySize(n *yaml.Node, field string) int64 {
	if n == nil {
		return DefaultMaxBodySize
	}
	s := d.Str(n, field)
	q, err := resource.ParseQuantity(s)
	if err != nil {
		d.Addf(n, field, "%q is not a size: give bytes or a quantity such as 3Mi (at most 25Mi)", s)
		return DefaultMaxBodySize
	}
	v := q.Value()
	if v <= 0 || v > MaxMaxBodySize {
		d.Addf(n, field, "%s is out of range: give more than 0 and at most 25Mi (default 3Mi)", s)
		return DefaultMaxBodySize
	}
	return v
}

func (d *decoder) rateLimit(n *yaml.Node, field string) RateLimit {
	f := d.Fields(n, field, "perMinute", "burst")
	return RateLimit{
		PerMinute: d.positiveInt(f["perMinute"], field+".perMinute", DefaultPerMinute),
		Burst:     d.positiveInt(f["burst"], field+".burst", DefaultBurst),
	}
}
