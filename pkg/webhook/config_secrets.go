package webhook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sealane/sealane/pkg/specfile"
	"go.yaml.in/yaml/v3"
)

// secrets decodes and resolves a receiver's secrets: one or two entries, each a file or an
// environment variable, never the value itself. It returns the secrets and where each was read.
// Problems name the file or the variable, never what they hold. recv is the receiver's node,
// for a missing list.
func (d *decoder) secrets(recv, n *yaml.Node, field string) ([]string, []SecretSource) {
	items := d.Items(n, field)
	switch {
	case n == nil || len(items) == 0:
		at := recv
		if n != nil {
			at = n
		}
		d.Addf(at, field, "missing: give the receiver's secret as a file (- file: PATH) or an environment variable (- env: NAME)")
		return nil, nil
	case len(items) > MaxSecrets:
		d.Addf(n, field, "%d secrets: give one, or two while rotating (the old and the new, both accepted)", len(items))
		return nil, nil
	}
	var out []string
	var sources []SecretSource
	for i, it := range items {
		if s, src, ok := d.secret(it, fmt.Sprintf("%s[%d]", field, i)); ok {
			out, sources = append(out, s), append(sources, src)
		}
	}
	return out, sources
}

// secret reads one entry of secrets: the secret and where it was read.
func (d *decoder) secret(n *yaml.Node, field string) (string, SecretSource, bool) {
	f := d.Fields(n, field, "file", "env")
	if f == nil {
		return "", SecretSource{}, false
	}
	fileNode, envNode := f["file"], f["env"]
	switch {
	case fileNode != nil && envNode != nil:
		d.Addf(envNode, field, "both file and env: give one")
	case fileNode != nil:
		name := d.Str(fileNode, field+".file")
		s, ok := d.secretFile(fileNode, field+".file", name)
		return s, SecretSource{File: name}, ok
	case envNode != nil:
		name := d.Str(envNode, field+".env")
		s, ok := d.secretEnv(envNode, field+".env", name)
		return s, SecretSource{Env: name}, ok
	case len(specfile.Deref(n).Content) == 0: // else its keys were reported
		d.Addf(n, field, "empty: give file: PATH or env: NAME")
	}
	return "", SecretSource{}, false
}

// secretFile reads the secret of the file name (node n), relative to the configuration's
// directory.
func (d *decoder) secretFile(n *yaml.Node, field, name string) (string, bool) {
	if name == "" {
		d.Addf(n, field, "empty: give the path of the file that holds the secret")
		return "", false
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(d.file), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(d.digest, "\x00file %s error %v\n", path, err)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.Addf(n, field, "file %s does not exist: create it or fix the path", path)
		default:
			d.Addf(n, field, "cannot read file %s: %v", path, unwrapPath(err))
		}
		return "", false
	}
	fmt.Fprintf(d.digest, "\x00file %s %d\n", path, len(data))
	d.digest.Write(data)
	s := strings.TrimRight(string(data), "\r\n")
	if s == "" {
		d.Addf(n, field, "file %s is empty: write the secret in it", path)
		return "", false
	}
	return s, true
}

// secretEnv reads the secret of the environment variable name (node n).
func (d *decoder) secretEnv(n *yaml.Node, field, name string) (string, bool) {
	if name == "" {
		d.Addf(n, field, "empty: give the name of the environment variable that holds the secret")
		return "", false
	}
	v, ok := d.getenv(name)
	fmt.Fprintf(d.digest, "\x00env %s %t %d\n", name, ok, len(v))
	d.digest.Write([]byte(v))
	switch {
	case !ok:
		d.Addf(n, field, "environment variable %s is not set: set it to the secret or use file:", name)
		return "", false
	case v == "":
		d.Addf(n, field, "environment variable %s is empty: set it to the secret", name)
		return "", false
	}
	return v, true
}

// unwrapPath drops the path of a *fs.PathError, which the message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
