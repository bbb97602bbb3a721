package release

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The labels the recorder sets on a release record: who asked for the revision and whether
// a signature proved it (the renderer's request verification).
const (
	LabelRequestedBy = "sealane.dev/requested-by"
	LabelVerified    = "sealane.dev/requested-by-verified"
)

// RequesterLabels are the release record labels of a revision requested by by. A name that is
// no label value (a claimed "user@host") is written with '_' for the characters a label
// value cannot hold; a verified client name always is one (intake.ClientKeys).
func RequesterLabels(by string, verified bool) map[string]string {
	if by == "" {
		return nil
	}
	return map[string]string{LabelRequestedBy: labelValue(by), LabelVerified: strconv.FormatBool(verified)}
}

// labelValue makes s a valid Kubernetes label value.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	v := string(b)
	if len(v) > validation.LabelValueMaxLength {
		v = v[:validation.LabelValueMaxLength]
	}
	v = strings.TrimRight(strings.TrimLeft(v, "-_."), "-_.")
	return v
}
