package renderer

import (
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/bus"
)

// TestAdmissionUploadsOfTenants: a request names uploads in input buckets only, values by their
// digest; a tenant's only in its own bucket; values whose content is not what the name says
// are refused.
func TestAdmissionUploadsOfTenants(t *testing.T) {
	values := []byte(`{"set":["a=1"]}`)
	name := bus.InputsName(values)
	own := bus.TenantInputBucket("team-a")
	for _, tc := range []struct {
		name, ref, own, want string
	}{
		{"operator, shared bucket", bus.BlobRef(bus.DefaultInputBucket, name), "", ""},
		{"operator, a tenant's bucket", bus.BlobRef(own, name), "", ""},
		{"tenant, its bucket", bus.BlobRef(own, name), own, ""},
		{"tenant, the shared bucket", bus.BlobRef(bus.DefaultInputBucket, name), own, "is not this client's upload"},
		{"tenant, another tenant's", bus.BlobRef(bus.TenantInputBucket("team-b"), name), own, "is not this client's upload"},
		{"the stages' blobs", bus.BlobRef(bus.DefaultBlobBucket, name), "", "is not in an input bucket"},
		{"values not by digest", bus.BlobRef(bus.DefaultInputBucket, "inputs/d1"), "", "SHA-256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkInputsRef(tc.ref, tc.own)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("checkInputsRef(%s, %q) = %v, want %q", tc.ref, tc.own, err, tc.want)
			}
		})
	}
	chartRef := bus.BlobRef(bus.TenantInputBucket("team-b"), "charts/"+strings.Repeat("a", 64))
	if err := checkUploadBucket("chart web", chartRef, own); err == nil || !strings.Contains(err.Error(), "chart web") {
		t.Errorf("a tenant naming another tenant's chart: %v", err)
	}
	ref := bus.BlobRef(own, name)
	if err := checkInputsDigest(ref, values); err != nil {
		t.Errorf("the values the name says: %v", err)
	}
	if err := checkInputsDigest(ref, []byte(`{"set":["a=2"]}`)); err == nil || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("replaced values: %v, want refused", err)
	}
}
