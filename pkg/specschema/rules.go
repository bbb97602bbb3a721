package specschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/webhook"
)

// The patterns of scalars the decoders read from strings.
const (
	// durationPattern is a Go duration of at least 0 (time.ParseDuration): 90s, 10m, 1h30m.
	durationPattern = `^\+?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// quantityPattern is a number of clusters or a percentage from 1 to 100 (rollout.ParseQuantity).
	quantityPattern = `^([0-9]+|0*([1-9][0-9]?|100)%)$`
	// sizePattern is a Kubernetes quantity (resource.ParseQuantity): 3Mi, 500k, 1e6.
	sizePattern = `^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$`
)

// mapped is the schema of a Go type whose YAML form is not its Go shape: a definition of its
// own when name is set, else a schema written in place (an enum).
type mapped struct {
	name   string
	schema *jsonschema.Schema
}

// mappedTypes are the types the decoders read differently from their Go shape: durations and
// quantities as strings, string types as one of their constants.
func mappedTypes(c comments) map[reflect.Type]mapped {
	duration := &jsonschema.Schema{
		Description: "A Go duration: 90s, 10m, 1h30m.",
		AnyOf: []*jsonschema.Schema{
			{Type: "string", Pattern: durationPattern},
			{Type: "integer", Const: 0},
		},
	}
	quantity := &jsonschema.Schema{
		Description: c.lookup(reflect.TypeFor[rollout.Quantity](), ""),
		AnyOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: "0"},
			{Type: "string", Pattern: quantityPattern},
		},
	}
	enum := func(values []any) mapped { return mapped{schema: &jsonschema.Schema{Type: "string", Enum: values}} }
	return map[reflect.Type]mapped{
		reflect.TypeFor[time.Duration]():              {name: "Duration", schema: duration},
		reflect.TypeFor[rollout.Quantity]():           {name: "Quantity", schema: quantity},
		reflect.TypeFor[rollout.Unmatched]():          enum(values(rollout.UnmatchedError, rollout.UnmatchedLastWave)),
		reflect.TypeFor[rollout.OnFailure]():          enum(values(rollout.Halt, rollout.RevertWave, rollout.RevertAll)),
		reflect.TypeFor[rollout.NoPreviousRevision](): enum(values(rollout.Keep, rollout.Uninstall)),
		reflect.TypeFor[rollout.OfflinePolicy]():      enum(values(rollout.OfflineWait, rollout.OfflineSkip)),
		reflect.TypeFor[rollout.OnNewRollout]():       enum(values(rollout.Queue, rollout.Supersede, rollout.Reject)),
		reflect.TypeFor[webhook.OnQueued]():           enum(values(webhook.OnQueuedQueue, webhook.OnQueuedSupersede)),
	}
}

// values are the values of an enum.
func values[T ~string](vs ...T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// rule sets in a generated schema what its Go types do not say.
type rule func(s *jsonschema.Schema) error

// rolloutRules: the one value of approval, and which chart keys go together.
var rolloutRules = []rule{
	setProperty("Wave", "approval", func(p *jsonschema.Schema) { p.Enum = values(rollout.ApprovalManual) }),
	setDefinition("Chart", func(d *jsonschema.Schema) {
		d.DependentRequired = map[string][]string{"repo": {"name", "version"}, "name": {"repo"}}
		d.DependentSchemas = map[string]*jsonschema.Schema{"version": {AnyOf: []*jsonschema.Schema{
			{Required: []string{"repo"}}, {Required: []string{"oci"}}}}}
	}),
}

// webhookRules: the receiver types and push kinds, the number of secrets, the body size, no
// onQueued beside a rollout (its onNewRollout says it).
var webhookRules = []rule{
	setProperty("Receiver", "type", func(p *jsonschema.Schema) { p.Enum = values(webhook.Types...) }),
	setProperty("Receiver", "events", func(p *jsonschema.Schema) {
		p.Items.Enum = values(webhook.EventPush, webhook.EventTagPush)
	}),
	setProperty("Receiver", "secrets", func(p *jsonschema.Schema) {
		n := uint64(webhook.MaxSecrets)
		p.MaxItems = &n
	}),
	setProperty("Receiver", "maxBodySize", func(p *jsonschema.Schema) {
		*p = jsonschema.Schema{Description: p.Description, AnyOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: "1", Maximum: jsonNumber(webhook.MaxMaxBodySize)},
			{Type: "string", Pattern: sizePattern},
		}}
	}),
	setDefinition("DeployTemplate", func(d *jsonschema.Schema) {
		d.DependentSchemas = map[string]*jsonschema.Schema{
			"rollout": {Not: &jsonschema.Schema{Required: []string{"onQueued"}}}}
	}),
}

// jsonNumber is n as a JSON number.
func jsonNumber(n int64) json.Number { return json.Number(strconv.FormatInt(n, 10)) }

// setDefinition is the rule that changes the definition name.
func setDefinition(name string, set func(*jsonschema.Schema)) rule {
	return func(s *jsonschema.Schema) error {
		d, ok := s.Definitions[name]
		if !ok {
			return fmt.Errorf("no definition %s", name)
		}
		set(d)
		return nil
	}
}

// setProperty is the rule that changes the property prop of the definition def.
func setProperty(def, prop string, set func(*jsonschema.Schema)) rule {
	return func(s *jsonschema.Schema) error {
		d, ok := s.Definitions[def]
		if !ok {
			return fmt.Errorf("no definition %s", def)
		}
		p, ok := d.Properties.Get(prop)
		if !ok {
			return fmt.Errorf("no property %s.%s", def, prop)
		}
		set(p)
		return nil
	}
}

// addFleet puts in s, the webhook receivers' schema, the definitions of spec, the rollout
// spec's schema, that a route's rollout uses: RolloutFleet, the keys rollout.FleetKeys of a
// spec, and RolloutFile, a rollout file's path; RolloutTemplate is one of the two.
func (g *generator) addFleet(s, spec *jsonschema.Schema) error {
	for name, def := range spec.Definitions {
		if _, taken := s.Definitions[name]; taken {
			return fmt.Errorf("two definitions named %s", name)
		}
		s.Definitions[name] = def
	}
	tmpl := reflect.TypeFor[webhook.RolloutTemplate]()
	fleet := &jsonschema.Schema{Type: "object", Description: g.comments.lookup(tmpl, "Fleet"),
		Properties: jsonschema.NewProperties(), AdditionalProperties: jsonschema.FalseSchema}
	for _, key := range rollout.FleetKeys {
		p, ok := spec.Properties.Get(key)
		if !ok {
			return fmt.Errorf("rollout.FleetKeys has %s, which the rollout spec's schema has not", key)
		}
		fleet.Properties.Set(key, p)
		if slices.Contains(spec.Required, key) {
			fleet.Required = append(fleet.Required, key)
		}
	}
	file, ok := s.Definitions["RolloutTemplate"]
	if !ok {
		return errors.New("no definition RolloutTemplate")
	}
	s.Definitions["RolloutTemplate"] = &jsonschema.Schema{Description: file.Description,
		OneOf: []*jsonschema.Schema{{Ref: "#/$defs/RolloutFleet"}, {Ref: "#/$defs/RolloutFile"}}}
	file.Description = ""
	s.Definitions["RolloutFleet"], s.Definitions["RolloutFile"] = fleet, file
	return nil
}

// prune drops the definitions of s that nothing refers to, from s or another definition in use.
func prune(s *jsonschema.Schema) {
	defs := s.Definitions
	used := map[string]bool{}
	var walk func(x *jsonschema.Schema)
	walk = func(x *jsonschema.Schema) {
		if x == nil {
			return
		}
		if name, ok := strings.CutPrefix(x.Ref, "#/$defs/"); ok && !used[name] {
			used[name] = true
			walk(defs[name])
		}
		for _, sub := range subschemas(x) {
			walk(sub)
		}
	}
	s.Definitions = nil
	walk(s)
	for name := range defs {
		if !used[name] {
			delete(defs, name)
		}
	}
	s.Definitions = defs
}

// subschemas are the schemas in x, but not its definitions.
func subschemas(x *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{x.Items, x.AdditionalProperties, x.Not, x.If, x.Then, x.Else, x.Contains}
	out = append(append(append(append(out, x.AllOf...), x.AnyOf...), x.OneOf...), x.PrefixItems...)
	if x.Properties != nil {
		out = slices.AppendSeq(out, x.Properties.ValuesFromOldest())
	}
	for _, m := range []map[string]*jsonschema.Schema{x.PatternProperties, x.DependentSchemas} {
		for _, sub := range m {
			out = append(out, sub)
		}
	}
	return out
}
