package apply

import "github.com/sealane/sealane/pkg/resource"

// Apply and Delete read werf and Helm annotations with package resource's keys and parsers, as
// the plan and package validate do, so that a value accepted there is read the same way here.

// ErrInvalidAnnotation is matched (errors.Is) by every *AnnotationError. It is
// resource.ErrInvalidAnnotation: the plan's errors about annotations match it too.
var ErrInvalidAnnotation = resource.ErrInvalidAnnotation

// AnnotationError is a werf or Helm annotation whose value Apply or Delete cannot read. Apply's
// have no Ref and Location: Apply wraps them with the object's reference and template.
type AnnotationError = resource.AnnotationError
