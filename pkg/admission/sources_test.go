package admission

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, tt := range []struct {
		name, in, want, err string
	}{
		{"scheme and host lowercased", "HTTPS://Charts.Example.COM/Stable/", "https://charts.example.com/Stable", ""},
		{"default https port", "https://charts.example.com:443/stable", "https://charts.example.com/stable", ""},
		{"default http port", "http://charts.example.com:80/x", "http://charts.example.com/x", ""},
		{"other port kept", "https://charts.example.com:8443/x", "https://charts.example.com:8443/x", ""},
		{"user, query and fragment dropped", "https://u:p@charts.example.com/x?a=1#f", "https://charts.example.com/x", ""},
		{"double slashes cleaned", "oci://registry.example.com//charts//web", "oci://registry.example.com/charts/web", ""},
		{"root", "https://charts.example.com/", "https://charts.example.com", ""},
		{"dot-dot refused", "https://charts.example.com/charts/../other", "", `".." segments`},
		{"encoded dot-dot refused", "https://charts.example.com/charts/%2e%2e/other", "", `".." segments`},
		{"file refused", "file:///etc/charts", "", "local chart paths are refused"},
		{"bare path refused", "/srv/charts/web", "", "local chart paths are refused"},
		{"relative path refused", "charts/web", "", "local chart paths are refused"},
		{"no host", "https:///x", "", "has no host"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalize(tt.in)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Normalize(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	if _, err := Normalize("https://user:hunter2@/x"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an error must not show the password: %v", err)
	}
}

func TestSourcePolicyAllow(t *testing.T) {
	policy, err := NewSourcePolicy([]string{
		"oci://registry.example.com/charts/*",
		"https://charts.example.com/*",
		"https://mirror.example.com/**",
		"HTTPS://Upper.Example.com:443/helm",
		"",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		location string
		allowed  bool
	}{
		{"oci://registry.example.com/charts/web", true},
		{"oci://REGISTRY.example.com:443/charts/web/", true},
		{"oci://registry.example.com/charts/team/web", false}, // * does not cross /
		{"oci://registry.example.com/other/web", false},
		{"oci://registry.example.com.evil.net/charts/web", false},
		{"https://charts.example.com/stable", true},
		{"https://charts.example.com", false},
		{"https://charts.example.com/stable/web-1.0.0.tgz", false},
		{"http://charts.example.com/stable", false}, // scheme matters
		{"https://mirror.example.com", true},        // a trailing /** matches its prefix
		{"https://mirror.example.com/a/b/c.tgz", true},
		{"https://mirror.example.com.evil.net/a", false},
		{"https://upper.example.com/helm", true},
		{"https://upper.example.com/helm/sub", false},
		{"https://charts.example.com/stable/../../x", false},
		{"file:///srv/charts/web", false},
		{"/srv/charts/web", false},
	} {
		err := policy.Allow(tt.location)
		if (err == nil) != tt.allowed {
			t.Errorf("Allow(%q) = %v, want allowed %v", tt.location, err, tt.allowed)
		}
	}
}

func TestSourcePolicyReasons(t *testing.T) {
	none, _ := NewSourcePolicy(nil)
	some, _ := NewSourcePolicy([]string{"oci://registry.example.com/charts/*"})
	for _, tt := range []struct {
		name     string
		policy   SourcePolicy
		location string
		want     []string
	}{
		{"no patterns", none, "https://charts.example.com/stable", []string{"https://charts.example.com/stable is not allowed",
			"only charts uploaded with the request", "no --allow-chart-source", "upload the chart"}},
		{"no match", some, "oci://ghcr.io/x/web", []string{"oci://ghcr.io/x/web is not allowed",
			"matches none of the renderer's --allow-chart-source patterns (oci://registry.example.com/charts/*)", "ask the operator"}},
		{"local path", some, "file:///etc", []string{"local chart paths are refused", "never reads its own filesystem", "upload the chart"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Allow(tt.location)
			if err == nil {
				t.Fatal("allowed")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("reason %q, want it to contain %q", err, w)
				}
			}
		})
	}
	if err := some.Allow("/etc/passwd"); !errors.Is(err, ErrLocalPath) {
		t.Errorf("a local path: %v, want ErrLocalPath", err)
	}
}

func TestNewSourcePolicyRefusesBadPatterns(t *testing.T) {
	for _, p := range []string{"charts.example.com/*", "https://", "https://user:pw@charts.example.com/*", "https://charts.example.com/x#frag", "://x"} {
		if _, err := NewSourcePolicy([]string{p}); err == nil {
			t.Errorf("NewSourcePolicy(%q): no error", p)
		} else if strings.Contains(err.Error(), ":pw@") {
			t.Errorf("error %v shows the password", err)
		}
	}
}
