package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"

	"github.com/nats-io/nkeys"
	"sigs.k8s.io/yaml"
)

// ClientKeys maps the public nkeys of the clients allowed to request deploys to their names.
// The file (--client-keys, $SEALANE_CLIENT_KEYS) is YAML: a client name, then its public user
// nkey or a list of them (more than one while a key is rotated):
//
//	ci-deployer: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4
//	alice:
//	  - UA6KOMQ67XOE3FHE37W4OXADVXVYISBNLTBUT2LSY5VFKAIJ7CRDR2RZ
//	  - UBJPR6IGBC4QKJ5EZCGXCRUUMSBRHLIFYZXN4Z6NVCTNUV3NRE3NIBJN
//
// A client may instead be a mapping with its keys and the scope that bounds its deploys (see
// Scope): the namespaces (and clusters) it deploys into, the cluster-scoped kinds the operator
// grants it, and the ServiceAccount its deploys run as:
//
//	team-a:
//	  keys: [UA6KOMQ67XOE3FHE37W4OXADVXVYISBNLTBUT2LSY5VFKAIJ7CRDR2RZ]
//	  namespaces: [team-a, team-a-*]
//	  clusters: [prod-eu]
//	  clusterScoped: [IngressClass.networking.k8s.io]
//	  serviceAccount: team-a/sealane-deployer
//
// A mapping with keys only is an operator client like the plain forms: its deploys are not
// bounded. A name is a Kubernetes label value (letters, digits, '-', '_', '.', at most 63,
// starting and ending with a letter or digit): it is recorded on the release records.
type ClientKeys struct {
	byKey  map[string]string
	scopes map[string]*Scope
}

// clientName is a valid Kubernetes label value.
var clientName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

// keyList reads one key or a list of keys.
type keyList []string

func (k *keyList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*k = keyList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a public nkey or a list of them")
	}
	*k = many
	return nil
}

// clientEntry is one client of the file: a key, a list of keys, or a mapping with keys and a
// scope.
type clientEntry struct {
	Keys keyList `json:"keys"`
	// scope is set when the mapping names anything besides keys.
	scope *Scope
}

func (c *clientEntry) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return c.Keys.UnmarshalJSON(b)
	}
	var m struct {
		Keys keyList `json:"keys"`
		Scope
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("want keys, namespaces, clusters, clusterScoped and serviceAccount: %w", err)
	}
	c.Keys = m.Keys
	if len(m.Namespaces)+len(m.Clusters)+len(m.ClusterScoped) > 0 || m.ServiceAccount != "" {
		sc := m.Scope
		c.scope = &sc
	}
	return nil
}

// LoadClientKeys reads a client keys file; the error names the file and the entry at fault.
func LoadClientKeys(file string) (ClientKeys, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return ClientKeys{}, fmt.Errorf("client keys: %w", err)
	}
	keys, err := ParseClientKeys(raw)
	if err != nil {
		return ClientKeys{}, fmt.Errorf("client keys %s: %w", file, err)
	}
	return keys, nil
}

// ParseClientKeys reads the YAML of a client keys file.
func ParseClientKeys(raw []byte) (ClientKeys, error) {
	var m map[string]clientEntry
	if err := yaml.UnmarshalStrict(raw, &m); err != nil {
		return ClientKeys{}, fmt.Errorf("want a map of client name to public nkey(s), or to keys and a scope: %w", err)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	ck := ClientKeys{byKey: map[string]string{}, scopes: map[string]*Scope{}}
	for _, name := range names {
		if !clientName.MatchString(name) {
			return ClientKeys{}, fmt.Errorf("client %q: a name is letters, digits, '-', '_' and '.', at most 63, starting and ending with a letter or digit", name)
		}
		entry := m[name]
		if len(entry.Keys) == 0 {
			return ClientKeys{}, fmt.Errorf("client %s: no key", name)
		}
		if entry.scope != nil {
			if err := entry.scope.validate(); err != nil {
				return ClientKeys{}, fmt.Errorf("client %s: %w", name, err)
			}
			ck.scopes[name] = entry.scope
		}
		for _, k := range entry.Keys {
			if !nkeys.IsValidPublicUserKey(k) {
				return ClientKeys{}, fmt.Errorf("client %s: %q is not a public user nkey (U…, from `nk -gen user -pubout` or `nsc`); never put a seed (S…) here", name, abbreviate(k))
			}
			if other, dup := ck.byKey[k]; dup {
				return ClientKeys{}, fmt.Errorf("key %s is listed for both %s and %s", k, other, name)
			}
			ck.byKey[k] = name
		}
	}
	return ck, nil
}

// abbreviate shows the start of a value that may be a secret (a seed pasted by mistake).
func abbreviate(s string) string {
	if len(s) > 4 {
		return s[:4] + "…"
	}
	return s
}

// Len is the number of keys.
func (c ClientKeys) Len() int { return len(c.byKey) }

// Scope returns the scope of the named client, nil for an operator client (no scope): its
// deploys are not bounded.
func (c ClientKeys) Scope(name string) *Scope { return c.scopes[name] }

// Client returns the name of the client whose key pub is.
func (c ClientKeys) Client(pub string) (string, bool) {
	name, ok := c.byKey[pub]
	return name, ok
}
