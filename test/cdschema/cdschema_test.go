package cdschema

import (
	"strings"
	"testing"

	"github.com/sealane/sealane/events"
)

// Every CDEvents type in sealane's catalogue has its official schema here, and the schemas
// compile offline.
func TestEveryCDEventTypeHasASchema(t *testing.T) {
	for _, typ := range events.AllTypes {
		if _, ok := Files[typ]; events.IsCDEvent(typ) != ok {
			t.Errorf("%s: CDEvent %v, schema %v", typ, events.IsCDEvent(typ), ok)
		}
	}
	err := Validate(events.CDServiceRemoved, []byte(`{"context":{"specversion":"0.5.1"},"subject":{}}`))
	if err == nil || strings.Contains(err.Error(), "compile") || strings.Contains(err.Error(), "no network") {
		t.Fatalf("an incomplete event: %v; want a validation error", err)
	}
}
