package resource

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseValues(t *testing.T) {
	tests := []struct {
		name    string
		parse   func(string) (any, error)
		value   string
		want    any
		wantErr string
	}{
		{"weight", wrap(ParseInt), "-10", -10, ""},
		{"weight not a number", wrap(ParseInt), "ten", nil, `must be an integer in quotes`},
		{"count", wrap(ParseCount), "3", 3, ""},
		{"count negative", wrap(ParseCount), "-1", nil, `must be a whole number >= 0`},
		{"replicas", wrap(ParseReplicas), "2147483647", 2147483647, ""},
		{"replicas beyond int32", wrap(ParseReplicas), "2147483648", nil, "must be at most 2147483647"},
		{"replicas negative", wrap(ParseReplicas), "-1", nil, `must be a whole number >= 0`},
		{"bool", wrap(ParseBool), "true", true, ""},
		{"bool yes", wrap(ParseBool), "yes", nil, `must be "true" or "false"`},
		{"ownership", wrap(ParseOwnership), "anyone", OwnershipAnyone, ""},
		{"ownership bad", wrap(ParseOwnership), "me", nil, "must be one of release, anyone"},
		{"deploy-on sorted and test-success", wrap(ParseDeployOn), " upgrade,pre-install,test-success,install", []Event{EventPreInstall, EventInstall, EventUpgrade, EventTest}, ""},
		{"deploy-on empty item", wrap(ParseDeployOn), "install,,upgrade", nil, "empty item in the comma-separated list"},
		{"deploy-on is case-sensitive", wrap(ParseDeployOn), "Install", nil, `unknown item "Install"`},
		{"hook as Helm reads it", wrap(ParseHook), "post-install, Pre-Upgrade", []Event{EventPostInstall, EventPreUpgrade}, ""},
		{"hook unknown", wrap(ParseHook), "pre-instal", nil, `unknown item "pre-instal"`},
		{"delete policy", wrap(ParseDeletePolicy), "failed,before-creation", []DeletePolicy{DeleteBeforeCreation, DeleteFailed}, ""},
		{"delete policy if immutable", wrap(ParseDeletePolicy), "succeeded, before-creation-if-immutable",
			[]DeletePolicy{DeleteBeforeCreationIfImmutable, DeleteSucceeded}, ""},
		{"delete policy helm spelling", wrap(ParseDeletePolicy), "hook-succeeded", nil, `unknown item "hook-succeeded"`},
		{"hook delete policy mapped", wrap(ParseHookDeletePolicy), "hook-failed, Before-Hook-Creation", []DeletePolicy{DeleteBeforeCreation, DeleteFailed}, ""},
		{"hook delete policy werf spelling", wrap(ParseHookDeletePolicy), "succeeded", nil, `unknown item "succeeded"`},
		{"resource policy", wrap(ParseResourcePolicy), " Keep ", true, ""},
		{"resource policy delete", wrap(ParseResourcePolicy), "delete", nil, `the only resource policy is "keep"`},
		{"werf resource policy", wrap(ParseWerfResourcePolicy), "skip-delete", []ResourcePolicy{ResourcePolicySkipDelete}, ""},
		{"werf resource policy list", wrap(ParseWerfResourcePolicy), " skip-update,keep ", []ResourcePolicy{ResourcePolicySkipUpdate, ResourcePolicyKeep}, ""},
		{"werf resource policy unknown", wrap(ParseWerfResourcePolicy), "skip-everything", nil, `unknown item "skip-everything"`},
		{"werf resource policy is case-sensitive", wrap(ParseWerfResourcePolicy), "Keep", nil, `unknown item "Keep"`},
		{"track termination", wrap(ParseTrackTerminationMode), "NonBlocking", NonBlocking, ""},
		{"track termination bad", wrap(ParseTrackTerminationMode), "Blocking", nil, "must be one of WaitUntilResourceReady, NonBlocking"},
		{"delete propagation", wrap(ParseDeletePropagation), "Orphan", "Orphan", ""},
		{"delete propagation in another case", wrap(ParseDeletePropagation), " background", "Background", ""},
		{"delete propagation bad", wrap(ParseDeletePropagation), "Later", nil, "must be one of Foreground, Background, Orphan"},
		{"namespace", wrap(ParseNamespace), "Other_NS", nil, "must be a namespace name"},
		{"release name", wrap(ParseReleaseName), "Shop_Production", nil, "must be a release name"},
		{"dependency", wrap(ParseDeployDependency), "state=ready, kind=StatefulSet,name=postgres",
			Dependency{State: StateReady, Kind: "StatefulSet", Name: "postgres"}, ""},
		{"dependency all properties", wrap(ParseDeployDependency), "state=present,kind=Deployment,group=apps,version=v1,name=app,namespace=app",
			Dependency{State: StatePresent, Kind: "Deployment", Group: "apps", Version: "v1", Name: "app", Namespace: "app"}, ""},
		{"dependency not key=value", wrap(ParseDeployDependency), "ready", nil, `"ready" is not key=value`},
		{"dependency no target", wrap(ParseDeployDependency), "state=ready", nil, "no target"},
		{"dependency no state", wrap(ParseDeployDependency), "name=db", nil, "state= is missing"},
		{"dependency bad state", wrap(ParseDeployDependency), "state=done,name=db", nil, `state must be "ready" or "present"`},
		{"dependency twice", wrap(ParseDeployDependency), "state=ready,name=a,name=b", nil, "name= given twice"},
		{"dependency unknown property", wrap(ParseDeployDependency), "state=ready,nmae=x", nil, `unknown property "nmae"`},
		{"external short", wrap(ParseExternalResource), "secret/config", ExternalDependency{Type: "secret", Name: "config"}, ""},
		{"external full", wrap(ParseExternalResource), "deployments.v1.apps/app", ExternalDependency{Type: "deployments", Version: "v1", Group: "apps", Name: "app"}, ""},
		{"external dotted group", wrap(ParseExternalResource), "ingresses.v1.networking.k8s.io/web", ExternalDependency{Type: "ingresses", Version: "v1", Group: "networking.k8s.io", Name: "web"}, ""},
		{"external type.group", wrap(ParseExternalResource), "deployments.apps/app", ExternalDependency{Type: "deployments", Group: "apps", Name: "app"}, ""},
		{"external no slash", wrap(ParseExternalResource), "secret", nil, `must have exactly one "/"`},
		{"external all", wrap(ParseExternalResource), "all/x", nil, `resource type "all" is not allowed`},
		{"external empty part", wrap(ParseExternalResource), "deployments..apps/x", nil, "empty part in resource type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse(tt.value)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func wrap[T any](parse func(string) (T, error)) func(string) (any, error) {
	return func(v string) (any, error) { return parse(v) }
}
