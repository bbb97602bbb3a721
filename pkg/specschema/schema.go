// Package specschema generates the JSON Schemas of sealane's YAML files — the rollout spec and
// the webhook receivers file — from the Go types their decoders fill, so that editors and CI
// can check a file before sealane reads it. The schemas are kept in docs/schemas; the package's
// tests fail when those differ from what the types generate.
package specschema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/sealane/sealane/pkg/rollout"
	"github.com/sealane/sealane/pkg/webhook"
)

const module = "github.com/sealane/sealane"

// File is one schema file of docs/schemas: its name and how it is generated.
type File struct {
	Name string
	// Generate returns the file's content; root is the module's directory, whose doc comments
	// (pkg/rollout, pkg/webhook) become the schema's descriptions.
	Generate func(root string) ([]byte, error)
}

// Files are the schema files of docs/schemas.
func Files() []File {
	return []File{
		{Name: "rollout-spec.schema.json", Generate: RolloutSpec},
		{Name: "webhook-receivers.schema.json", Generate: WebhookReceivers},
	}
}

// RolloutSpec returns the JSON Schema of a rollout spec file (rollout.Spec, as rollout.Parse
// reads it).
func RolloutSpec(root string) ([]byte, error) {
	g, err := newGenerator(root)
	if err != nil {
		return nil, err
	}
	s := g.reflect(reflect.TypeFor[rollout.Spec]())
	s.Title = "sealane rollout spec"
	if err := g.finish(s, rolloutRules); err != nil {
		return nil, fmt.Errorf("rollout spec schema: %w", err)
	}
	return encode(s)
}

// WebhookReceivers returns the JSON Schema of the webhook receivers file (webhook.Config, as
// webhook.LoadConfig reads it).
func WebhookReceivers(root string) ([]byte, error) {
	g, err := newGenerator(root)
	if err != nil {
		return nil, err
	}
	s := g.reflect(reflect.TypeFor[webhook.Config]())
	s.Title = "sealane webhook receivers"
	s.Description = "The receivers file of sealane serve webhook (--webhook-config): git webhook endpoints, their secrets and routes."
	if err := g.addFleet(s, g.reflect(reflect.TypeFor[rollout.Spec]())); err != nil {
		return nil, fmt.Errorf("webhook receivers schema: %w", err)
	}
	if err := g.finish(s, append(rolloutRules, webhookRules...)); err != nil {
		return nil, fmt.Errorf("webhook receivers schema: %w", err)
	}
	return encode(s)
}

// generator reflects Go types into schemas: struct by struct, the types of mappedTypes as
// their YAML form, descriptions from the doc comments.
type generator struct {
	r        *jsonschema.Reflector
	comments comments
	mapped   map[reflect.Type]mapped
	// named are the definitions of mappedTypes referenced so far, by name.
	named map[string]*jsonschema.Schema
}

func newGenerator(root string) (*generator, error) {
	c, err := readComments(root, "pkg/rollout", "pkg/webhook")
	if err != nil {
		return nil, err
	}
	g := &generator{comments: c, mapped: mappedTypes(c), named: map[string]*jsonschema.Schema{}}
	g.r = &jsonschema.Reflector{
		Anonymous:                  true,
		ExpandedStruct:             true,
		RequiredFromJSONSchemaTags: true,
		Mapper:                     g.mapType,
		LookupComment:              c.lookup,
	}
	return g, nil
}

// reflect returns the schema of t, its definitions under $defs.
func (g *generator) reflect(t reflect.Type) *jsonschema.Schema { return g.r.ReflectFromType(t) }

// mapType is the schema of a type of mappedTypes, a reference to its definition or an enum;
// nil for other types. It returns a new schema every time: the reflector writes the field's
// description into it.
func (g *generator) mapType(t reflect.Type) *jsonschema.Schema {
	m, ok := g.mapped[t]
	switch {
	case !ok:
		return nil
	case m.name == "":
		s := *m.schema
		return &s
	}
	g.named[m.name] = m.schema
	return &jsonschema.Schema{Ref: "#/$defs/" + m.name}
}

// finish adds the named definitions, applies rules and drops the definitions nothing refers to.
func (g *generator) finish(s *jsonschema.Schema, rules []rule) error {
	for name, def := range g.named {
		if _, taken := s.Definitions[name]; taken {
			return fmt.Errorf("two definitions named %s", name)
		}
		s.Definitions[name] = def
	}
	for _, r := range rules {
		if err := r(s); err != nil {
			return err
		}
	}
	prune(s)
	return nil
}

// encode is the schema as a file: indented JSON, <, > and & written as they are.
func encode(s *jsonschema.Schema) ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	text := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
	return []byte(text + "\n"), nil
}
