package validate

import (
	"math/rand"
	"strings"
	"testing"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
)

// TestFastChecksMatchKubernetes: the hand-written checks accept exactly what the regular
// expressions of apimachinery accept.
func TestFastChecksMatchKubernetes(t *testing.T) {
	inputs := []string{"", "a", "A", "-", "a-", "-a", "a.b", "a..b", "a.-b", "a-.b", "a_b", "example.com/x",
		"Example.com/x", "example.com/", "/x", "a/b/c", "app.kubernetes.io/name", "x.y/-z",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "a", strings.Repeat("a.", 127) + "a",
		strings.Repeat("a", 253) + "/x", strings.Repeat("a", 254) + "/x"}
	r := rand.New(rand.NewSource(1))
	const alphabet = "aZ09-._/ é"
	for i := 0; i < 20000; i++ {
		b := make([]byte, r.Intn(12))
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
		}
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		if got, want := labelValue(in), len(utilvalidation.IsValidLabelValue(in)) == 0; got != want {
			t.Errorf("labelValue(%q) = %v, want %v", in, got, want)
		}
		if got, want := qualifiedName(in), len(utilvalidation.IsQualifiedName(in)) == 0; got != want {
			t.Errorf("qualifiedName(%q) = %v, want %v", in, got, want)
		}
		if got, want := subdomain(in, 253), len(apivalidation.NameIsDNSSubdomain(in, false)) == 0; got != want {
			t.Errorf("subdomain(%q) = %v, want %v", in, got, want)
		}
	}
}
