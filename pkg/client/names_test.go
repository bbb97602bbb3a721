package client

import (
	"strings"
	"testing"

	"github.com/sealane/sealane/pkg/slug"
)

func TestResolveNames(t *testing.T) {
	cases := []struct {
		name                         string
		project, env, release, ns    string
		wantRelease, wantNS, wantErr string
	}{
		{name: "project and env", project: "shop", env: "staging", wantRelease: "shop-staging", wantNS: "shop-staging"},
		{name: "no env", project: "shop", wantRelease: "shop", wantNS: "shop"},
		{name: "explicit", project: "shop", env: "prod", release: "api", ns: "apps", wantRelease: "api", wantNS: "apps"},
		{name: "invalid release", project: "shop", release: "Bad_Name", wantErr: `release name "Bad_Name" is invalid`},
		{name: "release too long", project: "shop", release: strings.Repeat("a", 54), ns: "x", wantErr: "53 characters"},
		{name: "defaults are slugified", project: "Shop", env: "My_branch", wantRelease: "shop-my-branch-" + slug.Release("Shop-My_branch")[len("shop-my-branch-"):], wantNS: slug.Namespace("Shop-My_branch")},
		{name: "long defaults are cut", project: strings.Repeat("a", 40), env: strings.Repeat("b", 30), wantRelease: slug.Release(strings.Repeat("a", 40) + "-" + strings.Repeat("b", 30)), wantNS: slug.Namespace(strings.Repeat("a", 40) + "-" + strings.Repeat("b", 30))},
		{name: "invalid namespace", project: "shop", ns: "a.b", wantErr: `namespace "a.b" is invalid`},
		{name: "nothing", wantErr: "no release name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveNames(tc.project, tc.env, tc.release, tc.ns)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Release != tc.wantRelease || got.Namespace != tc.wantNS {
				t.Fatalf("ResolveNames = %+v, %v", got, err)
			}
		})
	}
}
