package clusterspec

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
)

// ErrPluginAuth is returned for a kubeconfig whose user authenticates through an exec or
// auth-provider plugin: a registered cluster's credentials must be in the kubeconfig itself
// (the services run no plugins).
var ErrPluginAuth = errors.New("authenticates with a plugin")

// DecodeKubeconfig parses a kubeconfig (YAML or JSON); where names it in errors.
func DecodeKubeconfig(data []byte, where string) (*clientcmdapi.Config, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, fmt.Errorf("%s: the kubeconfig is empty", where)
	}
	obj, _, err := clientcmdlatest.Codec.Decode(data, nil, clientcmdapi.NewConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: not a kubeconfig: %w", where, err)
	}
	cfg, ok := obj.(*clientcmdapi.Config)
	if !ok {
		return nil, fmt.Errorf("%s: not a kubeconfig (decoded a %T)", where, obj)
	}
	return cfg, nil
}

// EncodeKubeconfig serializes cfg as YAML.
func EncodeKubeconfig(cfg *clientcmdapi.Config) ([]byte, error) {
	data, err := runtime.Encode(clientcmdlatest.Codec, cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return data, nil
}

// SelfContained returns the part of cfg a registered cluster keeps: the context named context
// (empty: the current one), its cluster and user, with that context current. It refuses what
// a service cannot use from a Secret: a missing context, cluster or server, credentials from a
// plugin (ErrPluginAuth), files referenced by path. where names cfg in errors.
func SelfContained(cfg *clientcmdapi.Config, context, where string) (*clientcmdapi.Config, error) {
	if context == "" {
		context = cfg.CurrentContext
	}
	if context == "" {
		return nil, fmt.Errorf("%s: no current-context and no context given (have %s)", where, contextNames(cfg))
	}
	kctx := cfg.Contexts[context]
	if kctx == nil {
		return nil, fmt.Errorf("%s: context %q not found (have %s)", where, context, contextNames(cfg))
	}
	cluster := cfg.Clusters[kctx.Cluster]
	if cluster == nil {
		return nil, fmt.Errorf("%s: context %q names cluster %q, which the kubeconfig does not define", where, context, kctx.Cluster)
	}
	if err := checkServer(cluster, where, kctx.Cluster); err != nil {
		return nil, err
	}
	user := cfg.AuthInfos[kctx.AuthInfo]
	if user == nil && kctx.AuthInfo != "" {
		return nil, fmt.Errorf("%s: context %q names user %q, which the kubeconfig does not define", where, context, kctx.AuthInfo)
	}
	if user == nil {
		user = clientcmdapi.NewAuthInfo()
	}
	if err := checkUser(user, where, kctx.AuthInfo); err != nil {
		return nil, err
	}
	out := clientcmdapi.NewConfig()
	out.CurrentContext = context
	out.Contexts[context] = kctx.DeepCopy()
	out.Clusters[kctx.Cluster] = cluster.DeepCopy()
	out.AuthInfos[kctx.AuthInfo] = user.DeepCopy()
	return out, nil
}

func checkServer(c *clientcmdapi.Cluster, where, name string) error {
	if c.Server == "" {
		return fmt.Errorf("%s: cluster %q has no server URL", where, name)
	}
	u, err := url.Parse(c.Server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%s: cluster %q: server %q is not an http(s) URL", where, name, c.Server)
	}
	if u.User != nil {
		return fmt.Errorf("%s: cluster %q: the server URL holds credentials: put them in the user (token or client certificate) instead", where, name)
	}
	if c.CertificateAuthority != "" {
		return fmt.Errorf("%s: cluster %q: certificate-authority is a file path (%s), which a Secret cannot carry: "+
			"embed it (certificate-authority-data, e.g. `kubectl config view --minify --flatten`)", where, name, c.CertificateAuthority)
	}
	return nil
}

func checkUser(u *clientcmdapi.AuthInfo, where, name string) error {
	switch {
	case u.Exec != nil:
		return fmt.Errorf("%s: user %q %w (exec: %s): give a token or client certificate instead, e.g. a service account token", where, name, ErrPluginAuth, u.Exec.Command)
	case u.AuthProvider != nil:
		return fmt.Errorf("%s: user %q %w (auth-provider: %s): give a token or client certificate instead, e.g. a service account token", where, name, ErrPluginAuth, u.AuthProvider.Name)
	}
	for _, f := range []struct{ field, path string }{{"client-certificate", u.ClientCertificate}, {"client-key", u.ClientKey}, {"tokenFile", u.TokenFile}} {
		field, path := f.field, f.path
		if path != "" {
			return fmt.Errorf("%s: user %q: %s is a file path (%s), which a Secret cannot carry: embed it (%s-data or token, e.g. `kubectl config view --minify --flatten`)",
				where, name, field, path, strings.TrimSuffix(field, "File"))
		}
	}
	return nil
}

func contextNames(cfg *clientcmdapi.Config) string {
	if len(cfg.Contexts) == 0 {
		return "no contexts"
	}
	names := make([]string, 0, len(cfg.Contexts))
	for n := range cfg.Contexts {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
