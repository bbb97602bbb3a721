package events

import "testing"

func TestSubjects(t *testing.T) {
	target := Target{Cluster: "prod.eu 1", Namespace: "shop", Release: "api"}
	if got, want := NATSSubject(PhaseTracked, target), "sealane.deploy.phase_tracked.prod_eu_1.shop.api"; got != want {
		t.Errorf("NATSSubject = %q, want %q", got, want)
	}
	cases := []struct {
		f    Filter
		want string
	}{
		{Filter{}, "sealane.deploy.*.*.*.*"},
		{Filter{Type: DeployFailed}, "sealane.deploy.failed.*.*.*"},
		{Filter{Cluster: "c1", Release: "api"}, "sealane.deploy.*.c1.*.api"},
		{Filter{Type: ReleaseRecorded, Cluster: "c1", Namespace: "ns", Release: "api"}, "sealane.deploy.release_recorded.c1.ns.api"},
	}
	for _, tc := range cases {
		if got := tc.f.Subject(); got != tc.want {
			t.Errorf("%+v.Subject() = %q, want %q", tc.f, got, tc.want)
		}
	}
}

func TestTargetRoundTrip(t *testing.T) {
	in := Target{Cluster: "c1", Namespace: "shop", Release: "api"}
	out, err := ParseTarget(in.String())
	if err != nil || out != in {
		t.Fatalf("ParseTarget(%q) = %+v, %v", in.String(), out, err)
	}
	for _, bad := range []string{"", "clusters/c1", "x/c/namespaces/n/releases/r", "clusters/c/namespaces/n/releases/r/extra"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
}

func TestTypes(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range AllTypes {
		tok := typ.Token()
		if tok == "" || seen[tok] {
			t.Errorf("type %s has empty or repeated token %q", typ, tok)
		}
		seen[tok] = true
		for _, s := range []string{string(typ), tok} {
			if got, err := ParseType(s); err != nil || got != typ {
				t.Errorf("ParseType(%q) = %q, %v", s, got, err)
			}
		}
	}
	if _, err := ParseType("exploded"); err == nil {
		t.Error("unknown type accepted")
	}
}
