// Package cdschema validates CDEvents payloads against the official CDEvents v0.5.1 JSON
// schemas (draft 2020-12), embedded from cdevents-v0.5.1/ — copied unchanged from
// ../shared/reference/cdevents-v0.5.1 (the spec repository's schemas/ at tag v0.5.1). It is for
// tests: it makes github.com/santhosh-tekuri/jsonschema/v6 a dependency of tests only.
package cdschema

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sealane/sealane/events"
)

//go:embed cdevents-v0.5.1/*.json cdevents-v0.5.1/links/*.json
var files embed.FS

// base is the $id prefix of the v0.5.1 schemas.
const base = "https://cdevents.dev/0.5.1/schema/"

// Files maps each CDEvents type sealane emits to its schema file.
var Files = map[events.Type]string{
	events.CDServiceDeployed:     "servicedeployed.json",
	events.CDServiceUpgraded:     "serviceupgraded.json",
	events.CDServiceRolledBack:   "servicerolledback.json",
	events.CDServiceRemoved:      "serviceremoved.json",
	events.CDPipelineRunFinished: "pipelinerunfinished.json",
}

var (
	once     sync.Once
	compiled map[events.Type]*jsonschema.Schema
	errLoad  error
)

// Validate checks a CDEvent payload (JSON) against the official schema of its type.
func Validate(t events.Type, payload []byte) error {
	once.Do(func() { compiled, errLoad = compile() })
	if errLoad != nil {
		return errLoad
	}
	s, ok := compiled[t]
	if !ok {
		return fmt.Errorf("no CDEvents schema for %s", t)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%s payload: %w", t, err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("%s %s: %w", t, payload, err)
	}
	return nil
}

// compile registers every embedded schema, links/ included, under its own $id (so no $ref
// goes to the network: noNetwork refuses anything else) and compiles one per type, draft
// 2020-12 with formats asserted.
func compile() (map[events.Type]*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noNetwork{})
	ids := map[string]string{}
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if !strings.HasPrefix(id, base) {
			return fmt.Errorf("%s: $id %q is not under %s", path, id, base)
		}
		ids[strings.TrimPrefix(path, "cdevents-v0.5.1/")] = id
		return c.AddResource(id, doc)
	})
	if err != nil {
		return nil, err
	}
	out := map[events.Type]*jsonschema.Schema{}
	for t, f := range Files {
		if out[t], err = c.Compile(ids[f]); err != nil {
			return nil, fmt.Errorf("compile %s: %w", f, err)
		}
	}
	return out, nil
}

// noNetwork refuses every URL the compiler has not been given: the schemas are all embedded.
type noNetwork struct{}

func (noNetwork) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema %s is not embedded (no network)", url)
}
