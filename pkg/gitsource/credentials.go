package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Credentials maps repository URLs (and the paths below them) to secret files; the zero value is anonymous
// access. Build it with LoadCredentials.
type Credentials struct {
	file    string
	entries []credEntry
}

// credEntry is one entry of a credentials file. The secrets stay in their files, read
// when a Checkout needs them, so that a rotated secret is used without a restart.
type credEntry struct {
	URL            string `yaml:"url"`
	Username       string `yaml:"username"`
	TokenFile      string `yaml:"tokenFile"`
	SSHKeyFile     string `yaml:"sshKeyFile"`
	KnownHostsFile string `yaml:"knownHostsFile"`
}

// knownFields are the fields an entry may have; inlineSecretFields are refused with an
// error saying to put the secret in a file.
var (
	knownFields        = []string{"url", "username", "tokenFile", "sshKeyFile", "knownHostsFile"}
	inlineSecretFields = []string{"token", "password", "sshKey", "privateKey", "key", "passphrase", "secret"}
)

// LoadCredentials reads a YAML list of credentials entries from file (url prefix plus
// tokenFile for https, or sshKeyFile and knownHostsFile for ssh). Inline secrets and
// unknown fields are refused with an error naming the file, the entry and the field.
func LoadCredentials(file string) (Credentials, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Credentials{}, fmt.Errorf("git credentials %s: %w", file, err)
	}
	var raw []map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return Credentials{}, fmt.Errorf("git credentials %s: %w", file, err)
	}
	for i, m := range raw {
		if err := checkFields(m); err != nil {
			return Credentials{}, fmt.Errorf("git credentials %s: entry %d: %w", file, i, err)
		}
	}
	var entries []credEntry
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&entries); err != nil && len(raw) > 0 {
		return Credentials{}, fmt.Errorf("git credentials %s: %w", file, err)
	}
	for i := range entries {
		if err := entries[i].validate(); err != nil {
			return Credentials{}, fmt.Errorf("git credentials %s: entry %d (%s): %w", file, i, Redact(entries[i].URL), err)
		}
	}
	return Credentials{file: file, entries: entries}, nil
}

// checkFields refuses inline secrets and unknown fields of one raw entry.
func checkFields(m map[string]any) error {
	for k := range m {
		for _, s := range inlineSecretFields {
			if strings.EqualFold(k, s) {
				return fmt.Errorf("field %q: inline secrets are not allowed, name a file (tokenFile, sshKeyFile) instead", k)
			}
		}
		known := false
		for _, f := range knownFields {
			known = known || k == f
		}
		if !known {
			return fmt.Errorf("unknown field %q (known: %s)", k, strings.Join(knownFields, ", "))
		}
	}
	return nil
}

// validate checks that an entry names a URL and the files its scheme needs.
func (e *credEntry) validate() error {
	if e.URL == "" {
		return errors.New("field \"url\" is required")
	}
	if strings.Contains(e.URL, "@") && !isSSH(e.URL) && Redact(e.URL) != e.URL {
		return errors.New("field \"url\": credentials in the URL are not allowed, use tokenFile")
	}
	e.URL = normalize(e.URL)
	if isSSH(e.URL) {
		if e.SSHKeyFile == "" || e.KnownHostsFile == "" {
			return errors.New("an ssh entry needs sshKeyFile and knownHostsFile")
		}
		if e.TokenFile != "" {
			return errors.New("field \"tokenFile\" is for https entries, not ssh")
		}
		return nil
	}
	if e.TokenFile == "" {
		return errors.New("an https entry needs tokenFile")
	}
	if e.SSHKeyFile != "" || e.KnownHostsFile != "" {
		return errors.New("fields \"sshKeyFile\" and \"knownHostsFile\" are for ssh entries")
	}
	return nil
}

// isSSH reports whether a (normalized) URL uses the ssh transport.
func isSSH(u string) bool {
	return strings.HasPrefix(u, "ssh://") || strings.HasPrefix(u, "git+ssh://") ||
		(!strings.Contains(u, "://") && scpLike.MatchString(u))
}

// match is the entry for the normalized url with the longest path, if any: an entry applies
// to a URL of the same scheme, host and port (and user, when the entry names one) whose path
// is the entry's or below it at a "/" boundary ("acme/app" also covers "acme/app.git"). A
// plain string prefix would hand https://git.example.com's token to
// https://git.example.com.evil.net, and acme/app's to acme/app-fork.
func (c Credentials) match(rawURL string) (credEntry, bool) {
	var best credEntry
	bestLen, found := -1, false
	for _, e := range c.entries {
		if n, ok := urlCovers(e.URL, rawURL); ok && n > bestLen {
			best, bestLen, found = e, n, true
		}
	}
	return best, found
}

// urlCovers says whether the entry URL covers target (both normalized) and how long the
// entry's path is, for the longest match to win.
func urlCovers(entry, target string) (int, bool) {
	e, err := url.Parse(entry)
	if err != nil {
		return 0, false
	}
	u, err := url.Parse(target)
	if err != nil {
		return 0, false
	}
	scheme := strings.ToLower(u.Scheme)
	if !strings.EqualFold(e.Scheme, u.Scheme) || originOf(scheme, e) != originOf(scheme, u) {
		return 0, false
	}
	if e.User != nil && e.User.Username() != "" && (u.User == nil || u.User.Username() != e.User.Username()) {
		return 0, false
	}
	prefix := strings.TrimSuffix(e.Path, "/")
	p := u.Path
	switch {
	case prefix == "", p == prefix, p == prefix+".git", strings.HasPrefix(p, prefix+"/"):
		return len(prefix), true
	}
	return 0, false
}

// originOf is u's lowercase host and port, the scheme's default port filled in.
func originOf(scheme string, u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80", "ssh": "22", "git+ssh": "22"}[scheme]
	}
	return strings.ToLower(u.Hostname()) + ":" + port
}

// auth builds the transport authentication for url, reading the secret files now. It
// also returns the secrets read, for hiding them in error messages. An ssh URL without an
// entry is an error: ssh needs a key and a known_hosts file.
func (c Credentials) auth(url string) (transport.AuthMethod, []string, error) {
	e, ok := c.match(url)
	if !ok {
		if isSSH(url) {
			return nil, nil, errors.New("no git credentials entry for this ssh URL (ssh needs sshKeyFile and knownHostsFile)")
		}
		return nil, nil, nil
	}
	if !isSSH(url) {
		token, err := readSecret(e.TokenFile, "tokenFile")
		if err != nil {
			return nil, nil, err
		}
		user := e.Username
		if user == "" {
			user = "git"
		}
		return &githttp.BasicAuth{Username: user, Password: token}, []string{token}, nil
	}
	return sshAuth(e, url)
}

// sshAuth builds public-key authentication checked against the entry's known_hosts file.
// It offers the server only the host key algorithms the file has keys of for the host:
// otherwise the client may negotiate a key type the file does not list (an ECDSA key when
// the file has the ed25519 one) and refuse a server it knows.
func sshAuth(e credEntry, url string) (transport.AuthMethod, []string, error) {
	key, err := os.ReadFile(e.SSHKeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("sshKeyFile %s: %w", e.SSHKeyFile, cause(err))
	}
	if _, err := os.Stat(e.KnownHostsFile); err != nil {
		return nil, nil, fmt.Errorf("knownHostsFile %s: %w", e.KnownHostsFile, cause(err))
	}
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, nil, fmt.Errorf("repository URL: %w", redact(err))
	}
	user := e.Username
	if user == "" {
		user = ep.User
	}
	if user == "" {
		user = "git"
	}
	pk, err := gitssh.NewPublicKeys(user, key, "")
	if err != nil {
		return nil, nil, fmt.Errorf("sshKeyFile %s: not a usable private key: %w", e.SSHKeyFile, err)
	}
	db, err := gitssh.NewKnownHostsDb(e.KnownHostsFile)
	if err != nil {
		return nil, nil, fmt.Errorf("knownHostsFile %s: %w", e.KnownHostsFile, err)
	}
	port := ep.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	pk.HostKeyCallback = db.HostKeyCallback()
	pk.HostKeyAlgorithms = db.HostKeyAlgorithms(net.JoinHostPort(ep.Host, strconv.Itoa(port)))
	return pk, nil, nil
}

// sshError explains an ssh handshake failure (a host key not in known_hosts or not the one
// listed there, a key the server refuses) in front of it, or is nil for other errors.
func sshError(err error) error {
	var ke *knownhosts.KeyError
	switch {
	case errors.As(err, &ke) && len(ke.Want) > 0:
		return fmt.Errorf("ssh host key mismatch, connection refused: the server's host key is not the one knownHostsFile lists for it: %w", err)
	case errors.As(err, &ke):
		return fmt.Errorf("ssh host key unknown, connection refused: knownHostsFile has no key for this host: %w", err)
	case strings.Contains(err.Error(), "ssh: unable to authenticate"):
		return fmt.Errorf("authentication failed: the server refused the key of sshKeyFile (check the credentials for this URL): %w", err)
	}
	return nil
}

// readSecret reads a secret file; its error names the file and field, never the content.
func readSecret(file, field string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", field, file, cause(err))
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "", fmt.Errorf("%s %s is empty", field, file)
	}
	return s, nil
}

// cause is the reason of a file error without the path (the caller names the file once).
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
